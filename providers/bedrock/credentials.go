package bedrock

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
)

// The AWS SDK's full credential chain (config.LoadDefaultConfig, with SSO,
// STS and IMDS clients) adds about 2.3 MiB to the static binary; the part
// nanobot users rely on — environment variables and the shared config and
// credentials files, by profile — is small, so it is read here.

// env is the environment the chain reads.
type env func(string) string

// chain resolves what a call needs: credentials and the region.
type chain struct {
	profile string // providers.bedrock.profile; "" means AWS_PROFILE or "default"
	getenv  env
}

// profileName is the shared-file profile to read.
func (c chain) profileName() string {
	if c.profile != "" {
		return c.profile
	}
	if p := c.getenv("AWS_PROFILE"); p != "" {
		return p
	}
	return "default"
}

// credentials finds SigV4 credentials. A profile named in the config wins
// (as boto3's Session(profile_name=...) does); otherwise the environment's
// AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY / AWS_SESSION_TOKEN; otherwise
// the shared credentials file, then the shared config file, for
// AWS_PROFILE or "default". source says where they came from, for errors.
func (c chain) credentials() (creds aws.Credentials, source string, err error) {
	if c.profile == "" {
		id, secret := c.getenv("AWS_ACCESS_KEY_ID"), c.getenv("AWS_SECRET_ACCESS_KEY")
		if id != "" && secret != "" {
			return aws.Credentials{AccessKeyID: id, SecretAccessKey: secret, SessionToken: c.getenv("AWS_SESSION_TOKEN"),
				Source: "environment"}, "environment", nil
		}
	}
	profile := c.profileName()
	for _, f := range []struct {
		path    string
		section string
	}{
		{c.credentialsFile(), profile},
		{c.configFile(), configSection(profile)},
	} {
		kv, err := readSection(f.path, f.section)
		if err != nil {
			return aws.Credentials{}, "", err
		}
		id, secret := kv["aws_access_key_id"], kv["aws_secret_access_key"]
		if id != "" && secret != "" {
			src := fmt.Sprintf("%s [%s]", f.path, f.section)
			return aws.Credentials{AccessKeyID: id, SecretAccessKey: secret, SessionToken: kv["aws_session_token"], Source: src}, src, nil
		}
	}
	return aws.Credentials{}, "", fmt.Errorf("no AWS credentials: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, "+
		"or aws_access_key_id/aws_secret_access_key for profile %q in %s, or providers.bedrock.apiKey (a Bedrock API key)",
		profile, c.credentialsFile())
}

// region is the configured region, else AWS_REGION, AWS_DEFAULT_REGION,
// else the profile's region in the shared config file.
func (c chain) region(configured string) (string, error) {
	for _, r := range []string{configured, c.getenv("AWS_REGION"), c.getenv("AWS_DEFAULT_REGION")} {
		if r != "" {
			return r, nil
		}
	}
	kv, err := readSection(c.configFile(), configSection(c.profileName()))
	if err != nil {
		return "", err
	}
	if r := kv["region"]; r != "" {
		return r, nil
	}
	return "", errors.New("no AWS region: set providers.bedrock.region, AWS_REGION, or region in the profile of ~/.aws/config")
}

func (c chain) credentialsFile() string {
	if p := c.getenv("AWS_SHARED_CREDENTIALS_FILE"); p != "" {
		return p
	}
	return filepath.Join(c.home(), ".aws", "credentials")
}

func (c chain) configFile() string {
	if p := c.getenv("AWS_CONFIG_FILE"); p != "" {
		return p
	}
	return filepath.Join(c.home(), ".aws", "config")
}

func (c chain) home() string {
	if h := c.getenv("HOME"); h != "" {
		return h
	}
	h, _ := os.UserHomeDir()
	return h
}

// configSection is a profile's section name in ~/.aws/config: "default",
// or "profile NAME".
func configSection(profile string) string {
	if profile == "default" {
		return "default"
	}
	return "profile " + profile
}

// readSection returns the keys of one [section] of an AWS INI file
// (lower-cased keys, trimmed values). A missing file is an empty section.
func readSection(path, section string) (map[string]string, error) {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read AWS shared file: %w", err)
	}
	defer f.Close()
	out := map[string]string{}
	in := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' || line[0] == ';' {
			continue
		}
		if line[0] == '[' {
			name := strings.TrimSpace(strings.Trim(line, "[]"))
			in = strings.Join(strings.Fields(name), " ") == section
			continue
		}
		if !in {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok {
			continue
		}
		out[strings.ToLower(strings.TrimSpace(k))] = strings.TrimSpace(v)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	return out, nil
}
