package policy

import "slices"

// personalLabels are the labels of the built-in detectors of personal data,
// as opposed to secrets: what makes a record PII-bearing for retention
// (write-path RFC §12.10.4).
var personalLabels = []string{"card_number", "email", "iban", "phone"}

// Personal reports whether label is the label of a personal-data detector
// (an email address, a phone, card or bank account number).
func Personal(label string) bool { return slices.Contains(personalLabels, label) }

// AnyPersonal reports whether redaction found personal data: whether a
// record made from what was redacted is PII-bearing ([memory.PIITag]).
func AnyPersonal(fs []Finding) bool {
	return slices.ContainsFunc(fs, func(f Finding) bool { return Personal(f.Label) })
}

// AnyPersonalLabel is [AnyPersonal] over the labels a staged event keeps of
// its redactions.
func AnyPersonalLabel(labels []string) bool { return slices.ContainsFunc(labels, Personal) }
