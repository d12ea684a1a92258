package telegramtest

import (
	"fmt"
	"strconv"
	"strings"
)

// tags are the HTML tags Telegram's parse_mode=HTML accepts.
var tags = map[string]bool{
	"b": true, "strong": true, "i": true, "em": true, "u": true, "ins": true,
	"s": true, "strike": true, "del": true, "span": true, "tg-spoiler": true,
	"a": true, "code": true, "pre": true, "blockquote": true, "tg-emoji": true,
}

// ParseHTML parses text the way Telegram does for parse_mode=HTML, as
// strictly as its documentation states: only the supported tags, properly
// nested and closed; only &lt; &gt; &amp; &quot; and numeric entities; every
// other <, > and & is an error. It returns the visible text, and the same
// with each <pre> block written as a Markdown fence ("```lang" ... "```").
func ParseHTML(text string) (visible, rendered string, err error) {
	var vis, ren strings.Builder
	var stack []string
	for i := 0; i < len(text); {
		c := text[i]
		switch c {
		case '<':
			end := strings.IndexByte(text[i:], '>')
			if end < 0 {
				return "", "", fmt.Errorf("unclosed start tag at byte offset %d", i)
			}
			tag := text[i+1 : i+end]
			if err := checkTag(tag, &stack); err != nil {
				return "", "", fmt.Errorf("%w at byte offset %d", err, i)
			}
			name := strings.TrimPrefix(strings.Fields(tag + " ")[0], "/")
			if name == "pre" {
				if !strings.HasPrefix(tag, "/") {
					if ren.Len() > 0 && !strings.HasSuffix(ren.String(), "\n") {
						ren.WriteByte('\n')
					}
					ren.WriteString("```" + preLang(text[i+end+1:]) + "\n")
				} else {
					if !strings.HasSuffix(ren.String(), "\n") {
						ren.WriteByte('\n')
					}
					ren.WriteString("```")
					if rest := text[i+end+1:]; rest != "" && rest[0] != '\n' {
						ren.WriteByte('\n')
					}
				}
			}
			i += end + 1
		case '>':
			return "", "", fmt.Errorf("unexpected '>' at byte offset %d", i)
		case '&':
			end := strings.IndexByte(text[i:], ';')
			if end < 0 {
				return "", "", fmt.Errorf("unclosed entity at byte offset %d", i)
			}
			r, err := entity(text[i+1 : i+end])
			if err != nil {
				return "", "", fmt.Errorf("%w at byte offset %d", err, i)
			}
			vis.WriteString(r)
			ren.WriteString(r)
			i += end + 1
		default:
			vis.WriteByte(c)
			ren.WriteByte(c)
			i++
		}
	}
	if len(stack) > 0 {
		return "", "", fmt.Errorf("can't find end tag corresponding to start tag %q", stack[len(stack)-1])
	}
	return vis.String(), ren.String(), nil
}

func checkTag(tag string, stack *[]string) error {
	if name, ok := strings.CutPrefix(tag, "/"); ok {
		if len(*stack) == 0 || (*stack)[len(*stack)-1] != name {
			return fmt.Errorf("unmatched end tag %q", name)
		}
		*stack = (*stack)[:len(*stack)-1]
		return nil
	}
	name, attrs, _ := strings.Cut(tag, " ")
	if !tags[name] {
		return fmt.Errorf("unsupported start tag %q", name)
	}
	attrs = strings.TrimSpace(attrs)
	switch name {
	case "a":
		if !strings.HasPrefix(attrs, `href="`) || !strings.HasSuffix(attrs, `"`) || strings.Count(attrs, `"`) != 2 {
			return fmt.Errorf("bad attributes of tag a: %q", attrs)
		}
	case "span":
		if attrs != `class="tg-spoiler"` {
			return fmt.Errorf("bad attributes of tag span: %q", attrs)
		}
	case "code":
		if attrs != "" && (!strings.HasPrefix(attrs, `class="language-`) || !strings.HasSuffix(attrs, `"`) || strings.Count(attrs, `"`) != 2) {
			return fmt.Errorf("bad attributes of tag code: %q", attrs)
		}
	case "blockquote":
		if attrs != "" && attrs != "expandable" {
			return fmt.Errorf("bad attributes of tag blockquote: %q", attrs)
		}
	case "tg-emoji":
		if !strings.HasPrefix(attrs, `emoji-id="`) {
			return fmt.Errorf("bad attributes of tag tg-emoji: %q", attrs)
		}
	default:
		if attrs != "" {
			return fmt.Errorf("unexpected attributes of tag %s: %q", name, attrs)
		}
	}
	for _, open := range *stack {
		if open == "pre" || open == "code" {
			if !(open == "pre" && name == "code") {
				return fmt.Errorf("tag %q inside %q", name, open)
			}
		}
		if open == "a" && name == "a" {
			return fmt.Errorf("nested links")
		}
	}
	if name == "pre" && len(*stack) > 0 && (*stack)[len(*stack)-1] != "blockquote" {
		return fmt.Errorf("tag pre inside %q", (*stack)[len(*stack)-1])
	}
	*stack = append(*stack, name)
	return nil
}

// preLang is the language of a <pre><code class="language-x"> block.
func preLang(after string) string {
	rest, ok := strings.CutPrefix(after, `<code class="language-`)
	if !ok {
		return ""
	}
	lang, _, _ := strings.Cut(rest, `"`)
	return lang
}

func entity(name string) (string, error) {
	switch name {
	case "lt":
		return "<", nil
	case "gt":
		return ">", nil
	case "amp":
		return "&", nil
	case "quot":
		return `"`, nil
	}
	if num, ok := strings.CutPrefix(name, "#"); ok {
		base := 10
		if h, ok := strings.CutPrefix(num, "x"); ok {
			num, base = h, 16
		}
		n, err := strconv.ParseUint(num, base, 32)
		if err == nil && n > 0 && n <= 0x10FFFF {
			return string(rune(n)), nil
		}
	}
	return "", fmt.Errorf("unsupported HTML entity %q", "&"+name+";")
}
