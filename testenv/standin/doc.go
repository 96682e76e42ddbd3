// Package standin plays, in a test, the controllers that testenv's
// apiserver and client-go's fake clientset do not run: the deployment
// controller's status of a rolled-out Deployment and the Job controller's
// status of a finished Job.
//
// RolledOut, Stuck, Completed and Failed return the status those
// controllers write; Done writes it on any object read through a dynamic
// client; Deployments is a small controller that keeps the Deployments a
// selector picks rolled out until its context ends.
package standin
