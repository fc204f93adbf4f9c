package main

import "github.com/engram-dev/engram/api"

// location is where a problem's violation is: a JSON pointer into the
// request body, a query parameter or a header.
func location(f api.FieldError) string {
	switch {
	case f.Pointer != "":
		return f.Pointer
	case f.Parameter != "":
		return "parameter " + f.Parameter
	case f.Header != "":
		return "header " + f.Header
	}
	return "body"
}
