// Command runserver is a stdio MCP server with one tool, "run", that runs a
// shell command line and returns what it printed: the battery's stand-in
// for any MCP server that executes things on the model's behalf.
package main

import (
	"bytes"
	"context"
	"fmt"
	"log"
	"os/exec"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

type runArgs struct {
	Command string `json:"command" jsonschema:"shell command line"`
}

func run(ctx context.Context, _ *mcp.CallToolRequest, a runArgs) (*mcp.CallToolResult, any, error) {
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	var out bytes.Buffer
	cmd := exec.CommandContext(ctx, "sh", "-c", a.Command)
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.WaitDelay = time.Second
	err := cmd.Run()
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprintf("%s\n[exit: %v]", out.String(), err)}}}, nil, nil
}

func main() {
	s := mcp.NewServer(&mcp.Implementation{Name: "runserver", Version: "1"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "run", Description: "Run a shell command line."}, run)
	if err := s.Run(context.Background(), &mcp.StdioTransport{}); err != nil {
		log.Fatal(err)
	}
}
