package bus

import (
	"encoding/json"
	"testing"
)

func TestIsSilent(t *testing.T) {
	silent := []string{
		"HEARTBEAT_OK", "HEARTBEAT_OK.", " HEARTBEAT_OK\n", "**HEARTBEAT_OK**", "`HEARTBEAT_OK`",
		"HEARTBEAT_OK – nothing due", "HEARTBEAT_OK - nothing due right now.", "heartbeat_ok",
		"Nothing due. HEARTBEAT_OK", "All quiet today: HEARTBEAT_OK!", "\"HEARTBEAT_OK\"", "_HEARTBEAT_OK_",
		"HEARTBEAT_OK 👍", "",
	}
	for _, s := range silent {
		if !IsSilent(s) {
			t.Errorf("IsSilent(%q) = false, want true", s)
		}
	}
	loud := []string{
		"Your flight BA117 leaves at 14:05; check-in is open now.",
		"HEARTBEAT_OKAY", "NOT_HEARTBEAT_OK",
		"HEARTBEAT_OK but also: the backup job failed three times overnight and the disk on the NAS is at 97 percent.",
		"The report is ready.\n\nHEARTBEAT_OK would be wrong here because the build broke.",
		"I checked HEARTBEAT_OK status and the server is down",
	}
	for _, s := range loud {
		if IsSilent(s) {
			t.Errorf("IsSilent(%q) = true, want false", s)
		}
	}
}

func TestInboundLegacyMetadata(t *testing.T) {
	tests := []struct {
		name string
		json string
		want Inbound
	}{
		{"cron", `{"channel":"telegram","chatId":"1","content":"x","metadata":{"cron":"job1"}}`,
			Inbound{Channel: "telegram", ChatID: "1", Content: "x", Source: SourceCron, SourceRef: "job1"}},
		{"heartbeat", `{"channel":"telegram","chatId":"1","metadata":{"heartbeat":true,"maxHistory":8,"thread":"t"}}`,
			Inbound{Channel: "telegram", ChatID: "1", Source: SourceHeartbeat, Background: true, MaxHistory: 8, Metadata: Metadata{"thread": "t"}}},
		{"subagent", `{"channel":"slack","chatId":"C","metadata":{"subagent":"ab12"}}`,
			Inbound{Channel: "slack", ChatID: "C", Source: SourceSubagent, SourceRef: "ab12"}},
		{"system channel", `{"channel":"system","chatId":"telegram:42","content":"done"}`,
			Inbound{Channel: "telegram", ChatID: "42", Content: "done", Source: SourceSubagent}},
		{"typed wins", `{"channel":"web","chatId":"c","source":"api","maxHistory":3}`,
			Inbound{Channel: "web", ChatID: "c", Source: SourceAPI, MaxHistory: 3}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got Inbound
			if err := json.Unmarshal([]byte(tt.json), &got); err != nil {
				t.Fatal(err)
			}
			gb, _ := json.Marshal(got)
			wb, _ := json.Marshal(tt.want)
			if string(gb) != string(wb) {
				t.Errorf("got %s\nwant %s", gb, wb)
			}
		})
	}
	// A round trip keeps the typed fields.
	in := Inbound{Channel: "c", ChatID: "1", Source: SourceHeartbeat, Background: true, MaxHistory: 4}
	b, _ := json.Marshal(in)
	var out Inbound
	if err := json.Unmarshal(b, &out); err != nil || out.Source != in.Source || !out.Background || out.MaxHistory != 4 {
		t.Errorf("round trip: got %+v (err %v) from %s", out, err, b)
	}
}
