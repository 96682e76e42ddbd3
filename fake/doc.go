// Package fake provides in-memory fakes of every interface a converge engine
// asks its host to implement, for table-driven tests of operators built on
// converge.
//
// The fakes are data, in the manner of net/http/httptest and testing/fstest:
// each records the calls it received in exported fields, lets a test script
// the outcome of each call, is safe for concurrent use, and never panics on a
// call it was not told about.
package fake
