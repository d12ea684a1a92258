// Package option fills in the unset fields of a component's options, so
// a constructor states each default in one line. It has no state.
package option

// Positive sets *v to def when *v is zero or negative: an unset size,
// count or duration (a negative one means nothing either) takes its
// default. Strings use cmp.Or.
func Positive[T ~int | ~int64 | ~float64](v *T, def T) {
	if *v <= 0 {
		*v = def
	}
}
