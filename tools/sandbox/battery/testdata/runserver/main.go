// Command runserver is a stdio MCP server with one tool, "run", that runs a
// shell command and returns its output and exit status: the battery's
// stand-in for any MCP server that executes things. Each command leads its
// own process group, killed when the call's timeout passes, as a careful
// server would do.
package main

import (
	"bytes"
	"context"
	"fmt"
	"log"
	"os/exec"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

type runArgs struct {
	Command string `json:"command" jsonschema:"shell command line"`
	Timeout int    `json:"timeout,omitempty" jsonschema:"seconds before the command's process group is killed (default 10)"`
}

func run(ctx context.Context, _ *mcp.CallToolRequest, a runArgs) (*mcp.CallToolResult, any, error) {
	timeout := 10 * time.Second
	if a.Timeout > 0 {
		timeout = time.Duration(a.Timeout) * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var out bytes.Buffer
	cmd := exec.CommandContext(ctx, "bash", "-c", a.Command)
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = time.Second
	err := cmd.Run()
	status := "exit 0"
	if ctx.Err() != nil {
		status = "timed out"
	} else if err != nil {
		status = err.Error()
	}
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprintf("%s\n[%s]", out.String(), status)}}}, nil, nil
}

func main() {
	s := mcp.NewServer(&mcp.Implementation{Name: "runserver", Version: "1"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "run", Description: "Run a shell command."}, run)
	if err := s.Run(context.Background(), &mcp.StdioTransport{}); err != nil {
		log.Fatal(err)
	}
}
