package pg

import (
	"fmt"
	"math"

	"github.com/jackc/pgx/v5/pgtype"
)

// refuseLossyFloats makes a float that is not a whole number refuse to be
// sent as an integer. PostgreSQL infers an untyped parameter's type from
// its first use, and pgx converts a float to an integer parameter by
// truncating it: retrieval's common-term share, read beside a count
// (`$11 * c.n`), was inferred bigint and arrived as 0 for a whole stage
// (issue 13). Now such a query fails with an error naming the value.
//
// It is tried first of the map's wrappers, which pgx consults only for a
// value the parameter's codec cannot take as it is, so a float sent to a
// float or numeric parameter is encoded exactly as before.
func refuseLossyFloats(m *pgtype.Map) {
	m.TryWrapEncodePlanFuncs = append([]pgtype.TryWrapEncodePlanFunc{wrapFloat}, m.TryWrapEncodePlanFuncs...)
}

func wrapFloat(value any) (pgtype.WrappedEncodePlanNextSetter, any, bool) {
	f, ok := asFloat(value)
	if !ok {
		return nil, nil, false
	}
	return &wholeFloatPlan{}, f, true
}

// asFloat is value as a wholeFloat, when it is a float64 or a float32.
func asFloat(value any) (wholeFloat, bool) {
	switch v := value.(type) {
	case float64:
		return wholeFloat(v), true
	case float32:
		return wholeFloat(v), true
	}
	return 0, false
}

// wholeFloat is a float a codec may take as a float, or as an integer when
// it is a whole number.
type wholeFloat float64

// SkipUnderlyingTypePlan keeps pgx from unwrapping it back to a float64.
func (wholeFloat) SkipUnderlyingTypePlan() {}

func (f wholeFloat) Float64Value() (pgtype.Float8, error) {
	return pgtype.Float8{Float64: float64(f), Valid: true}, nil
}

func (f wholeFloat) Int64Value() (pgtype.Int8, error) {
	v := float64(f)
	if math.Trunc(v) != v || v < math.MinInt64 || v >= math.MaxInt64 {
		return pgtype.Int8{}, fmt.Errorf("%v is not a whole number, and its parameter is an integer: cast the parameter in the statement", v)
	}
	return pgtype.Int8{Int64: int64(v), Valid: true}, nil
}

type wholeFloatPlan struct{ next pgtype.EncodePlan }

func (p *wholeFloatPlan) SetNext(next pgtype.EncodePlan) { p.next = next }

func (p *wholeFloatPlan) Encode(value any, buf []byte) ([]byte, error) {
	f, ok := asFloat(value)
	if !ok {
		return nil, fmt.Errorf("encode %T as a float", value)
	}
	return p.next.Encode(f, buf)
}
