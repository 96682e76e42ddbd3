// Package controller holds the sample operator's controllers, one per
// engine, each the options of one of crconverge's configured controllers,
// and the sample's add-on driver.
package controller
