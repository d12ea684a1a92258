// Command hookprog is the test hook of package hooks: it reads a request
// on stdin and behaves as its first argument says.
//
//	continue | veto REASON | redact WORD | args KEY VALUE | sleep | crash | garbage | record FILE
package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"time"
)

func main() {
	body, err := io.ReadAll(os.Stdin)
	if err != nil {
		os.Exit(3)
	}
	var req struct {
		Point string         `json:"point"`
		Data  map[string]any `json:"data"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		fmt.Fprintln(os.Stderr, "bad request:", err)
		os.Exit(4)
	}
	answer := func(v any) { _ = json.NewEncoder(os.Stdout).Encode(v) }
	switch os.Args[1] {
	case "continue":
		answer(map[string]any{"action": "continue"})
	case "veto":
		answer(map[string]any{"action": "veto", "reason": os.Args[2]})
	case "redact":
		text, _ := req.Data["text"].(string)
		answer(map[string]any{"action": "modify", "data": map[string]any{"text": strings.ReplaceAll(text, os.Args[2], "***")}})
	case "args":
		args, _ := req.Data["arguments"].(map[string]any)
		if args == nil {
			args = map[string]any{}
		}
		args[os.Args[2]] = os.Args[3]
		answer(map[string]any{"action": "modify", "data": map[string]any{"arguments": args}})
	case "sleep":
		time.Sleep(time.Minute)
	case "crash":
		fmt.Fprintln(os.Stderr, "boom")
		os.Exit(2)
	case "garbage":
		fmt.Println("this is not json")
	case "record":
		if err := os.WriteFile(os.Args[2], body, 0o600); err != nil {
			os.Exit(5)
		}
	}
}
