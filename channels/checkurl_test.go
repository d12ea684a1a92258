package channels

import "testing"

func TestCheckURL(t *testing.T) {
	for _, tc := range []struct {
		v       string
		schemes []string
		want    string
	}{
		{"https://api.example.test", nil, ""},
		{"http://127.0.0.1:8080/x", nil, ""},
		{"ftp://x", nil, `apiBase: "ftp://x" is not an http(s) URL`},
		{"https://", nil, `apiBase: "https://" is not an http(s) URL`},
		{"wss://openws.example.test", []string{"ws", "wss"}, ""},
		{"https://x", []string{"ws", "wss"}, `apiBase: "https://x" is not a ws(s) URL`},
	} {
		err := CheckURL("apiBase", tc.v, tc.schemes...)
		got := ""
		if err != nil {
			got = err.Error()
		}
		if got != tc.want {
			t.Errorf("CheckURL(%q, %v) = %q, want %q", tc.v, tc.schemes, got, tc.want)
		}
	}
}
