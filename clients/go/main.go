// The go-client and go-admin drivers: github.com/apache/pulsar-client-go behind the client-driver
// protocol (clients/README.md, clients/protocol/v1.schema.json).
//
// One binary serves both drivers; its first argument names the one the harness started ("go-client" or
// "go-admin"), which hello reports. Each command is one call of the library's public API, made as an
// application makes it; the harness composes the calls into the model's operations.
//
// Answers go to the process's original standard output, which is moved to a descriptor of its own at
// start; descriptor 1 then points at standard error, so nothing the library or the runtime prints can
// reach the answer stream.
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/debug"
	"syscall"
)

const protocolVersion = 1

// libraryModule is the module whose release this driver reports and whose API it calls.
const libraryModule = "github.com/apache/pulsar-client-go"

type request struct {
	ID   json.RawMessage            `json:"id"`
	Cmd  string                     `json:"cmd"`
	Args map[string]json.RawMessage `json:"args"`
}

// badRequest: the request itself was wrong (answer "error").
type badRequest struct{ text string }

func (e badRequest) Error() string { return e.text }

// unsupported: the library has no call for the command (answer "unsupported").
type unsupported struct{ text string }

func (e unsupported) Error() string { return e.text }

type command func(args map[string]json.RawMessage) (map[string]any, error)

type loop struct {
	name     string
	commands map[string]command
	order    []string
	agreed   *bool
	stopping bool
	state    *driver
}

func libraryVersion() string {
	if info, ok := debug.ReadBuildInfo(); ok {
		for _, dep := range info.Deps {
			if dep.Path == libraryModule {
				if dep.Replace != nil {
					return dep.Replace.Version
				}
				return trimV(dep.Version)
			}
		}
	}
	return "unknown"
}

func trimV(version string) string {
	if len(version) > 1 && version[0] == 'v' {
		return version[1:]
	}
	return version
}

// claimStdout moves the answer stream off descriptor 1 and points descriptor 1 at standard error.
func claimStdout() (*os.File, error) {
	fd, err := syscall.Dup(1)
	if err != nil {
		return nil, err
	}
	if err := syscall.Dup3(2, 1, 0); err != nil {
		return nil, err
	}
	os.Stdout = os.Stderr
	return os.NewFile(uintptr(fd), "answers"), nil
}

func main() {
	name := "go"
	if len(os.Args) > 1 {
		name = os.Args[1]
	}
	answers, err := claimStdout()
	if err != nil {
		fmt.Fprintf(os.Stderr, "cannot keep standard output for answers: %v\n", err)
		os.Exit(2)
	}
	l := newLoop(name)
	defer l.state.closeAll()
	reader := bufio.NewReaderSize(os.Stdin, 1<<16)
	writer := bufio.NewWriter(answers)
	for {
		line, err := reader.ReadString('\n')
		if len(line) > 0 && !blank(line) {
			answer := l.answer(line)
			encoded, _ := json.Marshal(answer)
			writer.Write(encoded)
			writer.WriteByte('\n')
			writer.Flush()
			if l.stopping {
				return
			}
		}
		if err == io.EOF {
			return
		}
		if err != nil {
			fmt.Fprintf(os.Stderr, "reading requests failed: %v\n", err)
			return
		}
	}
}

func blank(line string) bool {
	for _, c := range line {
		if c != ' ' && c != '\t' && c != '\r' && c != '\n' {
			return false
		}
	}
	return true
}

func newLoop(name string) *loop {
	l := &loop{name: name, commands: map[string]command{}, state: newDriver()}
	d := l.state
	l.add("noop", func(map[string]json.RawMessage) (map[string]any, error) { return map[string]any{}, nil })
	l.add("close", d.close)
	l.add("reset", d.reset)
	l.add("client.create", d.createClient)
	l.add("client.get_partitions", d.getPartitions)
	l.add("producer.create", d.createProducer)
	l.add("producer.send", d.send)
	l.add("consumer.subscribe", d.subscribe)
	l.add("consumer.receive", d.receive)
	l.add("consumer.acknowledge", d.acknowledge)
	l.add("admin.create", d.createAdmin)
	l.add("admin.get_partitioned_topic_metadata", d.getPartitionedTopicMetadata)
	return l
}

func (l *loop) add(name string, c command) {
	l.commands[name] = c
	l.order = append(l.order, name)
}

func (l *loop) commandList() []string {
	return append(append([]string{"hello"}, l.order...), "shutdown")
}

func (l *loop) answer(line string) map[string]any {
	var req request
	if err := json.Unmarshal([]byte(line), &req); err != nil {
		return map[string]any{"id": nil, "error": fmt.Sprintf("request is not a JSON object (%v): %.200s", err, line)}
	}
	var id any
	if len(req.ID) > 0 {
		var number json.Number
		if json.Unmarshal(req.ID, &number) == nil && number != "" {
			id = number
		}
	}
	if req.Cmd == "" {
		return map[string]any{"id": id, "error": "request has no \"cmd\" string"}
	}
	if req.Args == nil {
		req.Args = map[string]json.RawMessage{}
	}
	if req.Cmd == "hello" {
		return l.hello(id, req.Args)
	}
	if l.agreed == nil || !*l.agreed {
		text := fmt.Sprintf("send hello with protocol %d first", protocolVersion)
		if l.agreed != nil {
			text = fmt.Sprintf("hello was refused: this driver speaks protocol %d only", protocolVersion)
		}
		return map[string]any{"id": id, "error": text}
	}
	if req.Cmd == "shutdown" {
		l.stopping = true
		return map[string]any{"id": id, "ok": map[string]any{}}
	}
	c, ok := l.commands[req.Cmd]
	if !ok {
		return map[string]any{"id": id, "error": fmt.Sprintf("unknown command %s; this driver knows %v", req.Cmd, l.commandList())}
	}
	result, err := c(req.Args)
	switch e := err.(type) {
	case nil:
		return map[string]any{"id": id, "ok": result}
	case badRequest:
		return map[string]any{"id": id, "error": req.Cmd + ": " + e.text}
	case unsupported:
		return map[string]any{"id": id, "unsupported": e.text}
	default:
		return map[string]any{"id": id, "raised": raisedOf(err)}
	}
}

func (l *loop) hello(id any, args map[string]json.RawMessage) map[string]any {
	var asked int
	raw, present := args["protocol"]
	if !present || json.Unmarshal(raw, &asked) != nil || asked != protocolVersion {
		refused := false
		l.agreed = &refused
		return map[string]any{"id": id, "error": fmt.Sprintf("protocol %s is not spoken here; this driver speaks protocol %d",
			string(raw), protocolVersion)}
	}
	agreed := true
	l.agreed = &agreed
	return map[string]any{"id": id, "ok": map[string]any{
		"protocol": protocolVersion, "driver": l.name, "language": "go", "runtime": runtime.Version(),
		"library": libraryModule, "library_version": libraryVersion(), "commands": l.commandList(),
		"options": []string{"auth_token", "tls_trust_certs_file"},
	}}
}
