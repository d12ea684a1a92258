// Package gateway is the long-running daemon behind `nanobot gateway`. Its
// Run assembles the bus, the channel manager, the agent loop, the outbound
// dispatcher, cron, heartbeat and the HTTP server (health, metrics, web
// chat), starts them in order, and stops them in reverse when its context
// ends. Sub-packages hold each service: bus, cron, heartbeat, logging.
package gateway
