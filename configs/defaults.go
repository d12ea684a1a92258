package configs

// Default returns the built-in configuration: what nanobot runs on with no
// config file.
func Default() Config {
	return Config{
		Agents: AgentsConfig{Defaults: AgentDefaults{
			Workspace:              "",
			Model:                  "anthropic/claude-sonnet-4-5",
			Provider:               "auto",
			FallbackModels:         []FallbackModel{},
			SessionScope:           ScopePerChat,
			MaxRepliesPerMinute:    20,
			Queue:                  DefaultQueue(),
			MaxTokens:              8192,
			ContextWindowTokens:    65536,
			Temperature:            0.1,
			MaxToolIterations:      40,
			Timezone:               "",
			ReasoningEffort:        "",
			MaxConcurrentTurns:     8,
			MaxToolResultChars:     16000,
			MaxConcurrentSubagents: 4,
			RequestTimeoutS:        300,
			StreamIdleTimeoutS:     90,
		}},
		Providers: map[string]ProviderConfig{},
		Channels: ChannelsConfig{
			SendProgress:   true,
			SendToolHints:  true,
			SendMaxRetries: 3,
			OutboxMaxAgeH:  24,
			Platforms:      map[string]map[string]any{},
		},
		Cluster: ClusterConfig{Role: "all", Prefix: "nanobot", Partitions: 16, LeaseTTLS: 10, AckWaitS: 30},
		Gateway: GatewayConfig{
			Host:          "127.0.0.1",
			Port:          18790,
			AllowedHosts:  []string{},
			Heartbeat:     HeartbeatConfig{Enabled: true, IntervalS: 1800},
			TrimCodePages: true,
		},
		API: APIConfig{Enabled: true, APIKeys: []string{}, CORSOrigins: []string{}, MaxBodyBytes: DefaultAPIMaxBodyBytes, MaxUploadBytes: DefaultAPIMaxUploadBytes,
			QueueTimeoutMs: DefaultAPIQueueTimeoutMs},
		Tools: ToolsConfig{
			RestrictToWorkspace: true,
			Exec: ExecConfig{
				Enable:           true,
				Timeout:          60,
				DenyPatterns:     []string{},
				AllowPatterns:    []string{},
				Sandbox:          "auto",
				AllowedEnvKeys:   []string{},
				AllowPaths:       AllowPathsConfig{ReadOnly: []string{}, ReadWrite: []string{}},
				Approval:         "off",
				ApprovedCommands: []string{},
				ApprovalTimeout:  300,
				Sessions:         ExecSessionsConfig{Enable: true, MaxSessions: 8, IdleTimeoutMinutes: 30, MaxLifetimeMinutes: 240, MaxOutputChars: 50000},
			},
			Web: WebConfig{
				Search: WebSearchConfig{Provider: "duckduckgo", MaxResults: 5},
				Fetch:  WebFetchConfig{MaxChars: 50000},
			},
			Message:       MessageToolConfig{AllowAnyTarget: false},
			MCPServers:    map[string]MCPServerConfig{},
			SSRFAllowlist: []string{},
			Disabled:      []string{},
			Browser:       BrowserToolConfig{Enable: true, Headless: true, IdleTimeoutMinutes: 10, MaxTabs: 4, Approval: "off"},
		},
		Log: LogConfig{Level: "info", Format: "text"},
	}
}

// MCPServerDefaults returns the defaults applied to every mcpServers entry.
func MCPServerDefaults() MCPServerConfig {
	return MCPServerConfig{ToolTimeout: 30, EnabledTools: []string{"*"}}
}
