// Package backends maps each providers.Backend* name to the constructor of
// its backend package, for providers.New:
//
//	p, err := providers.New(res, providers.Options{Backends: backends.All()})
//
// It exists so package providers does not import its own backends; cmd is
// the one place that wires them in.
//
// Concurrency: the constructors do no IO; every backend they return is
// safe for concurrent use. The xai-grok backend's model-catalog cache is
// shared by its callers under a mutex, and concurrent looks at the
// catalog share one request.
package backends

import (
	"net/http"
	"os"

	"fmt"

	"github.com/nanobot-go/nanobot/providers/entra"

	"github.com/nanobot-go/nanobot/providers"
	"github.com/nanobot-go/nanobot/providers/anthropic"
	"github.com/nanobot-go/nanobot/providers/bedrock"
	"github.com/nanobot-go/nanobot/providers/openai"
)

// DefaultAzureAPIVersion is used when providers.azure_openai.apiVersion is unset.
const DefaultAzureAPIVersion = "2024-10-21"

// All returns a fresh map of every backend.
func All() map[string]providers.BackendFunc {
	return map[string]providers.BackendFunc{
		providers.BackendOpenAICompat:    OpenAICompat,
		providers.BackendAzureOpenAI:     AzureOpenAI,
		providers.BackendAnthropic:       Anthropic,
		providers.BackendOpenAIResponses: OpenAIResponses,
		providers.BackendBedrock:         Bedrock,
	}
}

// OpenAICompat builds the OpenAI-compatible backend for res.
func OpenAICompat(res providers.Resolution, opts providers.Options) (providers.Provider, error) {
	if err := withProxy(res, &opts); err != nil {
		return nil, err
	}
	return openai.New(openAIOptions(res, opts))
}

// OpenAIResponses builds the Responses API backend for res.
func OpenAIResponses(res providers.Resolution, opts providers.Options) (providers.Provider, error) {
	if err := withProxy(res, &opts); err != nil {
		return nil, err
	}
	if res.Spec.Name == xaiGrokProvider {
		return xaiGrok(res, opts)
	}
	p, err := openai.NewResponses(openAIOptions(res, opts))
	if err != nil {
		return nil, err
	}
	if res.Spec.Name == codexProvider {
		return codex{p: p}, nil
	}
	return p, nil
}

// withProxy gives opts a client that uses the provider's proxy, unless a
// client was injected.
func withProxy(res providers.Resolution, opts *providers.Options) error {
	if res.Proxy == "" || opts.HTTPClient != nil {
		return nil
	}
	c, err := providers.ProxyClient(res.Proxy)
	if err != nil {
		return fmt.Errorf("proxy: %w", err)
	}
	opts.HTTPClient = c
	return nil
}

// AzureOpenAI builds the Azure OpenAI backend for res; the model is the
// deployment name.
func AzureOpenAI(res providers.Resolution, opts providers.Options) (providers.Provider, error) {
	if res.APIBase == "" {
		return nil, fmt.Errorf("azure_openai needs apiBase (https://NAME.openai.azure.com)")
	}
	if err := withProxy(res, &opts); err != nil {
		return nil, err
	}
	if res.APIKey == "" {
		// Microsoft Entra ID instead of a key, from what the environment
		// offers (a service principal, a workload or managed identity,
		// the Azure CLI).
		src, err := entra.FromEnv(os.Getenv, nil)
		if err != nil {
			return nil, fmt.Errorf("azure_openai has no apiKey: %w", err)
		}
		base := http.DefaultTransport
		hc := &http.Client{}
		if opts.HTTPClient != nil {
			*hc = *opts.HTTPClient
			if opts.HTTPClient.Transport != nil {
				base = opts.HTTPClient.Transport
			}
		}
		hc.Transport = &entra.Transport{Cred: entra.NewCredential(src), Base: base}
		opts.HTTPClient = hc
		if opts.Logger != nil {
			opts.Logger.Info("azure_openai signs in with Entra ID", "source", src.Name())
		}
	}
	o := openAIOptions(res, opts)
	o.AzureAPIVersion = res.APIVersion
	if o.AzureAPIVersion == "" {
		o.AzureAPIVersion = DefaultAzureAPIVersion
	}
	return openai.New(o)
}

// Anthropic builds the Messages API backend for res.
func Anthropic(res providers.Resolution, opts providers.Options) (providers.Provider, error) {
	if err := withProxy(res, &opts); err != nil {
		return nil, err
	}
	return anthropic.New(anthropic.Options{Endpoint: endpoint(res, opts), Logger: opts.Logger})
}

// Bedrock builds the AWS Bedrock Converse backend for res.
func Bedrock(res providers.Resolution, opts providers.Options) (providers.Provider, error) {
	if err := withProxy(res, &opts); err != nil {
		return nil, err
	}
	return bedrock.New(bedrock.Options{
		Endpoint: endpoint(res, opts), Region: res.Region, Profile: res.Profile, Logger: opts.Logger,
	})
}

// endpoint is what every backend is given of res and opts: the provider's
// name, key, base URL and extras, the HTTP client and the timeouts.
func endpoint(res providers.Resolution, opts providers.Options) providers.Endpoint {
	request, idle := opts.EffectiveTimeouts()
	return providers.Endpoint{
		Name: res.Provider, APIKey: res.APIKey, APIBase: res.APIBase, ExtraHeaders: res.ExtraHeaders, ExtraBody: res.ExtraBody,
		HTTPClient: opts.HTTPClient, RequestTimeout: request, StreamIdleTimeout: idle,
	}
}

func openAIOptions(res providers.Resolution, opts providers.Options) openai.Options {
	return openai.Options{
		Endpoint:      endpoint(res, opts),
		SchemaDialect: res.Spec.SchemaDialect, NoReasoningReplay: res.Spec.NoReasoningReplay,
		MaxCompletionTokens: res.Spec.MaxCompletionTokens, Logger: opts.Logger,
	}
}

// Embedder builds the embeddings client of res: the OpenAI-compatible
// providers' POST /embeddings (Azure's per deployment). Other APIs have
// none here. The chat's extra body fields are not sent with it.
func Embedder(res providers.Resolution, opts providers.Options) (providers.Embedder, error) {
	res.ExtraBody = nil
	var p providers.Provider
	var err error
	switch res.Spec.Backend {
	case providers.BackendOpenAICompat:
		p, err = OpenAICompat(res, opts)
	case providers.BackendAzureOpenAI:
		p, err = AzureOpenAI(res, opts)
	default:
		return nil, fmt.Errorf("provider %s speaks %s, which has no OpenAI-compatible /embeddings endpoint", res.Provider, res.Spec.Backend)
	}
	if err != nil {
		return nil, fmt.Errorf("provider %s: %w", res.Provider, err)
	}
	return p.(providers.Embedder), nil
}
