package memory

import "slices"

// PIITag marks a record that holds, or was made from, personal data: the
// write path adds it when the policy's redactor found personal data (an
// email address, a phone, card or bank account number) in what the record
// was made from, and a writer may add it. It makes the record PII-bearing
// for retention (write-path RFC §12.10.4).
const PIITag = "pii"

// RetentionClass is a record's data classification for retention
// (write-path RFC §12.10.4): each class has its own maximum retention.
type RetentionClass string

// Retention classes, strictest first.
const (
	ClassPII               RetentionClass = "pii"
	ClassBusinessSensitive RetentionClass = "business_sensitive"
	ClassGeneral           RetentionClass = "general"
	ClassPublic            RetentionClass = "public"
)

// RetentionClasses lists every retention class, strictest first.
var RetentionClasses = []RetentionClass{ClassPII, ClassBusinessSensitive, ClassGeneral, ClassPublic}

// Valid reports whether c is a retention class.
func (c RetentionClass) Valid() bool { return slices.Contains(RetentionClasses, c) }

// ClassOf is the retention class of a record of sensitivity s with tags:
// PII-bearing when it carries [PIITag] or is high or hyper (what the
// redactor gives card and account numbers and secrets, and what operators'
// rules give regulated content); business-sensitive at medium (what a
// user typed, an email or phone number once redacted); general at low;
// public at public. The database's engram_retention_class (migration 021)
// says the same.
func ClassOf(s Sensitivity, tags []string) RetentionClass {
	switch {
	case slices.Contains(tags, PIITag) || s.Rank() >= High.Rank():
		return ClassPII
	case s == Medium:
		return ClassBusinessSensitive
	case s == Low:
		return ClassGeneral
	}
	return ClassPublic
}
