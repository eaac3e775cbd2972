package rhoclient

// The client against a real `rho serve` (the `rho` on PATH), following a real mission.

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"
)

func gitEnv(home string) []string {
	env := []string{}
	for _, pair := range os.Environ() {
		if !strings.HasPrefix(pair, "RHO_") && !strings.HasPrefix(pair, "GIT_") && !strings.HasPrefix(pair, "HOME=") {
			env = append(env, pair)
		}
	}
	return append(env, "HOME="+home, "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1",
		"GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@t.invalid",
		"GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@t.invalid")
}

func run(t *testing.T, dir string, env []string, name string, args ...string) string {
	t.Helper()
	command := exec.Command(name, args...)
	command.Dir, command.Env = dir, env
	out, err := command.Output()
	if err != nil {
		t.Fatalf("%s %v: %v", name, args, err)
	}
	return string(out)
}

func TestFollowALiveMissionToItsEnd(t *testing.T) {
	if _, err := exec.LookPath("rho"); err != nil {
		t.Fatal("rho is not on PATH: the live tests need it")
	}
	home := t.TempDir()
	repo := filepath.Join(home, "project")
	env := gitEnv(home)
	run(t, home, env, "git", "init", "-q", "-b", "main", repo)
	run(t, repo, env, "git", "commit", "-q", "--allow-empty", "-m", "start")
	gate := filepath.Join(home, "go")
	wait := "while [ ! -e '" + gate + "' ]; do sleep 0.05; done"
	run(t, repo, env, "rho", "task", "add", "First", "--command", wait+"; echo 1 > one.txt")
	run(t, repo, env, "rho", "task", "add", "Second", "--command", "echo 2 > two.txt", "--blocked-by", "task_1")

	token := "go-client-test-token-of-rho"
	tokenFile := filepath.Join(home, "token")
	os.WriteFile(tokenFile, []byte(token), 0o600)
	server := exec.Command("rho", "serve", "--port", "0", "--token-file", tokenFile)
	server.Dir, server.Env = repo, env
	stdout, _ := server.StdoutPipe()
	if err := server.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { server.Process.Kill(); server.Wait() }()
	line, _ := bufio.NewReader(stdout).ReadString('\n')
	match := regexp.MustCompile(`^rho serve: (http://[^/]+)/`).FindStringSubmatch(line)
	if match == nil {
		t.Fatalf("rho serve printed no URL: %q", line)
	}
	mission := exec.Command("rho", "mission", "--from-tasks")
	mission.Dir, mission.Env = repo, env
	if err := mission.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { mission.Process.Kill(); mission.Wait() }()

	missions := filepath.Join(repo, ".rho", "missions")
	var id string
	for deadline := time.Now().Add(30 * time.Second); id == ""; {
		// The folder is made before its first mission.json: until that is written, the
		// server rightly knows no such mission.
		entries, _ := os.ReadDir(missions)
		if len(entries) > 0 && fileExists(filepath.Join(missions, entries[0].Name(), "mission.json")) {
			id = entries[0].Name()
		} else if time.Now().After(deadline) {
			t.Fatal("no mission started")
		}
		time.Sleep(50 * time.Millisecond)
	}
	c := New(match[1], token)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var events []Event
	err := c.Follow(ctx, id, func(e Event) error {
		events = append(events, e)
		if len(events) == 1 {
			os.WriteFile(gate, nil, 0o600) // the first task may go on now
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	var got, want []int
	for _, e := range events {
		if e.Kind == "journal" {
			got = append(got, e.ID)
		}
	}
	journal, _ := os.ReadFile(filepath.Join(missions, id, "journal.jsonl"))
	for _, line := range strings.Split(strings.TrimSpace(string(journal)), "\n") {
		var record struct{ Seq int }
		json.Unmarshal([]byte(line), &record)
		want = append(want, record.Seq)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("journal records %v, want %v", got, want)
	}
	if end := events[len(events)-1]; end.Kind != "end" || end.Data["status"] != "completed" {
		t.Fatalf("end: %+v", end)
	}

	graph, err := c.MissionGraph(ctx, id, "")
	if err != nil {
		t.Fatal(err)
	}
	exported := run(t, repo, env, "rho", "graph", "export", "--mission-dir", filepath.Join(missions, id))
	if string(graph.Raw) != exported {
		t.Fatal("the graph is not what rho graph export prints")
	}
	scoped, err := c.TaskGraph(ctx, "acme/widgets")
	if err != nil || string(scoped.Raw) != run(t, repo, env, "rho", "graph", "export", "--repository", "acme/widgets") {
		t.Fatalf("scoped task graph: %v", err)
	}
	if _, err := New(match[1], "not-the-token").Missions(ctx); !errors.Is(err, ErrAuth) {
		t.Fatalf("401: %v", err)
	}
	if _, err := c.Mission(ctx, "ffffffff"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("404: %v", err)
	}
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}
