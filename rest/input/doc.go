// Package input turns what a REST client sends into checked values: the
// key list of a path and the values of query parameters.
//
// Package rest reads the request (path unescaping, which parameter is
// present) and hands the strings it read to input; input decides what they
// mean and which are refused. Keeping the two apart keeps these rules
// testable as plain functions, without a server or a request.
//
// Every refusal wraps region.ErrInvalid, so that rest answers it 400
// through its one error table; input never chooses a status.
//
// input is pure: no I/O, no state. It must not import Echo or net/http
// (reading requests is rest's), nor any kvnode package but region, whose
// validation and sentinel errors it uses (imports_test.go checks).
package input
