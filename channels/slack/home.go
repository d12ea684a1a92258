package slack

import (
	"context"
	"strings"

	"github.com/slack-go/slack"
	"github.com/slack-go/slack/slackevents"

	"github.com/nanobot-go/nanobot/channels"
)

// The App Home tab. When a user opens it (app_home_opened, tab "home"),
// the adapter publishes a view made of what the channel layer knows: how
// to reach the bot here (direct messages, mentions, the group policy),
// whether the user may talk to it (the gate's allow-list and pairing), the
// commands and the workbench link. How the agent is doing (the model, the
// user's conversation) is the agent's and is not shown: /nanobot status
// answers it.

// maxHomeBlocks is Slack's limit on the blocks of a Home tab view.
const maxHomeBlocks = 100

// openedHome publishes the Home tab for the user who opened it.
func (c *Channel) openedHome(ctx context.Context, in channels.Inbox, e *slackevents.AppHomeOpenedEvent) {
	if !c.cfg.appHome() || e.Tab != "home" || e.User == "" {
		return
	}
	view := c.homeView(e.User, channels.Admits(in, c.Name(), e.User))
	if _, err := c.api.PublishViewContext(ctx, slack.PublishViewContextRequest{UserID: e.User, View: view}); err != nil && ctx.Err() == nil {
		c.log.Warn("slack: publishing the Home tab failed", "user", e.User, "err", c.redact.Error(err))
	}
}

// homeView is the Home tab for user; admitted says whether the gate lets
// them talk to the bot.
func (c *Channel) homeView(user string, admitted bool) slack.HomeTabViewRequest {
	md := func(text string) slack.Block {
		return slack.NewSectionBlock(slack.NewTextBlockObject(slack.MarkdownType, text, false, false), nil, nil)
	}
	header := func(text string) slack.Block {
		return slack.NewHeaderBlock(slack.NewTextBlockObject(slack.PlainTextType, text, false, false))
	}
	me := "me"
	if bot := c.self(); bot != "" {
		me = "<@" + bot + ">"
	}
	where := "Write to me in the *Messages* tab"
	switch c.cfg.GroupPolicy {
	case channels.GroupOpen:
		where += ", or in any channel I'm in: there I read every message."
	case channels.GroupAllowlist:
		where += ", or in the channels my owner chose, where I read every message."
	default:
		where += ", or mention " + me + " in a channel I'm in."
	}
	if c.cfg.threads() {
		where += " In channels I answer in a thread, and each thread is a conversation of its own."
	}
	access := "✅ You can talk to me."
	if !admitted {
		access = "🔒 I don't know you yet. Write to me in the *Messages* tab: I'll give you a pairing code to pass to my owner."
	}
	slash := c.cfg.SlashCommand
	blocks := []slack.Block{
		header("Your AI assistant"),
		md("Hi <@" + user + ">! " + where),
		md(access),
		slack.NewDividerBlock(),
		header("Commands"),
		md("Type `" + slash + " <command>` anywhere, or the command itself (`/new`) in a conversation with me. `" + slash + "` alone lists what you may use; a command marked _(admins)_ is obeyed only from my owner's admins."),
	}
	var lines []string
	for _, cmd := range c.commands {
		lines = append(lines, "`"+slash+" "+strings.TrimPrefix(cmd.Usage(), "/")+"` — "+escape(cmd.Help))
	}
	for _, text := range chunkLines(lines, sectionLimit) {
		if len(blocks) < maxHomeBlocks-2 {
			blocks = append(blocks, md(text))
		}
	}
	if c.cfg.WorkbenchURL != "" {
		blocks = append(blocks, slack.NewDividerBlock(), md("<"+escape(c.cfg.WorkbenchURL)+"|Open the workbench>: conversations, memory, usage and settings in the browser."))
	}
	return slack.HomeTabViewRequest{Type: slack.VTHomeTab, Blocks: slack.Blocks{BlockSet: blocks}}
}

// chunkLines joins lines into texts of at most limit bytes, breaking
// between lines (a line longer than limit is cut).
func chunkLines(lines []string, limit int) []string {
	var out []string
	var b strings.Builder
	for _, l := range lines {
		if len(l) > limit {
			l = strings.ToValidUTF8(l[:limit], "")
		}
		if b.Len() > 0 && b.Len()+1+len(l) > limit {
			out = append(out, b.String())
			b.Reset()
		}
		if b.Len() > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(l)
	}
	if b.Len() > 0 {
		out = append(out, b.String())
	}
	return out
}
