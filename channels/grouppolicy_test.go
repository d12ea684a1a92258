package channels

import (
	"strings"
	"testing"
)

func TestGroupPolicyAdmits(t *testing.T) {
	listed := []string{"g1"}
	for _, tc := range []struct {
		p         GroupPolicy
		group     bool
		addressed bool
		chat      string
		want      bool
	}{
		{GroupMention, false, false, "dm", true},
		{GroupMention, true, false, "g1", false},
		{GroupMention, true, true, "g2", true},
		{"", true, false, "g1", false}, // empty is the mention default
		{"", true, true, "g1", true},
		{GroupOpen, true, false, "g2", true},
		{GroupAllowlist, true, false, "g1", true},
		{GroupAllowlist, true, true, "g2", false}, // a mention does not open an unlisted group
		{GroupAllowlist, false, false, "dm", true},
	} {
		if got := tc.p.Admits(tc.group, tc.addressed, tc.chat, listed); got != tc.want {
			t.Errorf("%q.Admits(group=%v, addressed=%v, %q) = %v, want %v", tc.p, tc.group, tc.addressed, tc.chat, got, tc.want)
		}
	}
}

func TestGroupPolicyCheck(t *testing.T) {
	for _, tc := range []struct {
		p     GroupPolicy
		allow []string
		want  string // substring of the error; "" = valid
	}{
		{GroupMention, nil, ""},
		{GroupOpen, nil, ""},
		{GroupAllowlist, []string{"g"}, ""},
		{GroupAllowlist, nil, `groupAllowFrom: required with groupPolicy "allowlist"`},
		{"sometimes", nil, `groupPolicy: "sometimes" is not "mention", "open" or "allowlist"`},
		{"", nil, `groupPolicy: "" is not`},
	} {
		err := tc.p.Check("groupAllowFrom", tc.allow)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%q.Check: %v, want nil", tc.p, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%q.Check = %v, want %q", tc.p, err, tc.want)
		}
	}
}
