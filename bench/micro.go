package main

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
)

// microResult is one Go benchmark line.
type microResult struct {
	Pkg, Name   string
	NsPerOp     float64
	BytesPerOp  int64
	AllocsPerOp int64
	Extra       string // custom metrics (MB/s, ...)
}

var benchLine = regexp.MustCompile(`^Benchmark(\S+?)(?:-\d+)?\s+\d+\s+([\d.]+) ns/op(.*)$`)

// microPackages are the hot paths and their benchmarks.
var microPackages = []string{"./bus", "./agent/session", "./agent", "./tools", "./channels/telegram", "./channels"}

const microPattern = `^Benchmark(PublishConsume|Append|Load|History|TurnOverhead|CastValidate|ToHTML|DispatchDeltas)$`

// measureMicro runs the Go micro-benchmarks of the hot paths, and the
// cluster throughput benchmark (1, 2 and 4 workers on embedded NATS).
func measureMicro(r *report, quick bool) error {
	benchtime, clusterTime := "1s", "400x"
	if quick {
		benchtime, clusterTime = "20x", "40x"
	}
	var err error
	if r.Micro, err = goBench(microPattern, benchtime, microPackages...); err != nil {
		return err
	}
	r.Cluster, err = goBench(`^BenchmarkClusterThroughput$`, clusterTime, "./gateway")
	return err
}

// goBench runs `go test -bench` and parses its result lines.
func goBench(pattern, benchtime string, pkgs ...string) ([]microResult, error) {
	args := append([]string{"test", "-run", "^$", "-bench", pattern, "-benchmem", "-benchtime", benchtime, "-count", "1", "-timeout", "5m"}, pkgs...)
	cmd := exec.Command("go", args...)
	cmd.Env = os.Environ()
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("go test -bench: %v\n%s", err, out.String())
	}
	var results []microResult
	pkg := ""
	sc := bufio.NewScanner(&out)
	for sc.Scan() {
		line := sc.Text()
		if p, ok := strings.CutPrefix(line, "pkg: "); ok {
			pkg = strings.TrimPrefix(p, "github.com/nanobot-go/nanobot/")
			continue
		}
		m := benchLine.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		ns, _ := strconv.ParseFloat(m[2], 64)
		res := microResult{Pkg: pkg, Name: m[1], NsPerOp: ns}
		fields := strings.Fields(m[3])
		var extra []string
		for i := 0; i+1 < len(fields); i += 2 {
			v, unit := fields[i], fields[i+1]
			switch unit {
			case "B/op":
				res.BytesPerOp, _ = strconv.ParseInt(v, 10, 64)
			case "allocs/op":
				res.AllocsPerOp, _ = strconv.ParseInt(v, 10, 64)
			default:
				extra = append(extra, v+" "+unit)
			}
		}
		res.Extra = strings.Join(extra, ", ")
		results = append(results, res)
	}
	if len(results) == 0 {
		return nil, fmt.Errorf("no benchmark results in:\n%s", out.String())
	}
	return results, nil
}
