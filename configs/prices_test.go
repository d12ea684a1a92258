package configs

import (
	"strings"
	"testing"
)

func TestProviderPrices(t *testing.T) {
	l := load(t, `{"providers": {"openai": {"apiKey": "k", "prices": {"gpt-4o": {"input": 2, "cachedInput": 1, "output": 8}}}}}`)
	p := l.Config.Providers["openai"].Prices["gpt-4o"]
	if p.Input == nil || *p.Input != 2 || p.CachedInput == nil || *p.CachedInput != 1 || p.Output == nil || *p.Output != 8 || p.CacheWrite != nil {
		t.Errorf("prices = %+v", p)
	}
	bad := []struct{ body, want string }{
		{`{"providers": {"openai": {"prices": {"gpt-4o": {"input": 2}}}}}`, `providers.openai.prices["gpt-4o"].output: required`},
		{`{"providers": {"openai": {"prices": {"gpt-4o": {"input": -1, "output": 2}}}}}`, `providers.openai.prices["gpt-4o"].input: want 0 or more`},
		{`{"providers": {"deepseek": {"prices": {"x": {"input": 1, "output": 2, "cacheWrite": -3}}}}}`, `providers.deepseek.prices["x"].cacheWrite: want 0 or more`},
		{`{"providers": {"openai": {"prices": {"gpt-4o": {"input": "cheap", "output": 2}}}}}`, `providers.openai.prices.gpt-4o.input: want number, got string`},
	}
	for _, b := range bad {
		_, err := Load(Options{Path: writeConfig(t, b.body), Environ: []string{}})
		if err == nil || !strings.Contains(err.Error(), b.want) {
			t.Errorf("%s: error %v, want it to contain %q", b.body, err, b.want)
		}
	}
}
