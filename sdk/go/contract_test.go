package rhoclient

// The client against the recorded answers of sdk/contract (the same the Python and TypeScript
// ones use), served by net/http/httptest.

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
)

var contractDir = filepath.Join("..", "contract")

type answer struct {
	Name        string `json:"name"`
	Path        string `json:"path"`
	Status      int    `json:"status"`
	ContentType string `json:"content_type"`
	File        string `json:"file"`
	Authorized  bool   `json:"authorized"`
}

type recording struct {
	Token     string   `json:"token"`
	MissionID string   `json:"mission_id"`
	Answers   []answer `json:"answers"`
}

func loadRecording(t *testing.T) recording {
	t.Helper()
	var found recording
	data, err := os.ReadFile(filepath.Join(contractDir, "answers.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &found); err != nil {
		t.Fatal(err)
	}
	return found
}

func read(t *testing.T, name string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(contractDir, name))
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// samePath compares paths and queries however the query is encoded ("%20" or "+").
func samePath(one, other string) bool {
	a, errA := url.Parse(one)
	b, errB := url.Parse(other)
	if errA != nil || errB != nil || a.Path != b.Path {
		return false
	}
	return reflect.DeepEqual(a.Query(), b.Query())
}

func recordedServer(t *testing.T, rec recording, overrides map[string]string) *httptest.Server {
	t.Helper()
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var chosen *answer
		for i := range rec.Answers {
			a := &rec.Answers[i]
			if r.Header.Get("Authorization") != "Bearer "+rec.Token {
				if a.Name == "error-401" {
					chosen = a
					break
				}
				continue
			}
			if a.Authorized && samePath(a.Path, r.URL.RequestURI()) {
				chosen = a
				break
			}
		}
		if chosen == nil {
			w.WriteHeader(http.StatusNotFound)
			w.Write([]byte(`{"error": "not recorded"}`))
			return
		}
		file := chosen.File
		if override, ok := overrides[r.URL.Path]; ok {
			file = override
		}
		w.Header().Set("Content-Type", chosen.ContentType)
		w.WriteHeader(chosen.Status)
		w.Write(read(t, file))
	}))
	t.Cleanup(server.Close)
	return server
}

func TestRecordedAnswers(t *testing.T) {
	rec := loadRecording(t)
	c := New(recordedServer(t, rec, nil).URL, rec.Token)
	ctx := context.Background()
	rows, err := c.Missions(ctx)
	if err != nil || len(rows) != 1 || rows[0].ID != rec.MissionID || rows[0].Counts["failed"] != 1 {
		t.Fatalf("missions: %v %+v", err, rows)
	}
	mission, err := c.Mission(ctx, rec.MissionID)
	if err != nil || mission["id"] != rec.MissionID {
		t.Fatalf("mission: %v", err)
	}
	graph, err := c.MissionGraph(ctx, rec.MissionID, "")
	if err != nil {
		t.Fatal(err)
	}
	if string(graph.Raw) != string(read(t, "mission-graph.json")) {
		t.Fatal("the graph is not the recorded bytes")
	}
	scoped, err := c.MissionGraph(ctx, rec.MissionID, "acme/widgets")
	if err != nil || scoped.Scope.RepositoryID == nil || *scoped.Scope.RepositoryID != "acme/widgets" {
		t.Fatalf("scoped: %v", err)
	}
	tasks, err := c.TaskGraph(ctx, "")
	if err != nil || len(tasks.Nodes) != 3 {
		t.Fatalf("task graph: %v", err)
	}
	var log struct {
		Lines []string `json:"lines"`
	}
	json.Unmarshal(read(t, "log.json"), &log)
	lines, err := c.LogTail(ctx, rec.MissionID, "task_2", 5)
	if err != nil || !reflect.DeepEqual(lines, log.Lines) {
		t.Fatalf("log: %v %v", err, lines)
	}
}

func TestRefusalsAreTypedErrors(t *testing.T) {
	rec := loadRecording(t)
	url := recordedServer(t, rec, nil).URL
	ctx := context.Background()
	var failure *Error
	_, err := New(url, "wrong").Missions(ctx)
	var body struct{ Error string }
	json.Unmarshal(read(t, "error-401.json"), &body)
	if !errors.Is(err, ErrAuth) || !errors.As(err, &failure) || failure.Status != 401 || failure.Message != body.Error {
		t.Fatalf("401: %v", err)
	}
	c := New(url, rec.Token)
	if _, err := c.Mission(ctx, "ffffffff"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("404: %v", err)
	}
	if _, err := c.LogTail(ctx, rec.MissionID, "task_2", 0); !errors.Is(err, ErrRequest) {
		t.Fatalf("400: %v", err)
	}
	if _, err := c.TaskGraph(ctx, " "); !errors.Is(err, ErrRequest) {
		t.Fatalf("400 scope: %v", err)
	}
	_, err = c.Mission(ctx, "../etc")
	if !errors.Is(err, ErrRequest) || !errors.As(err, &failure) || failure.Status != 0 {
		t.Fatalf("a bad id is refused before anything is sent: %v", err)
	}
	_, err = New("http://127.0.0.1:9", "x").Missions(ctx)
	if !errors.As(err, &failure) || failure.Status != 0 || errors.Is(err, ErrAuth) {
		t.Fatalf("no server: %v", err)
	}
}

func TestTheTamperedGraphIsRefused(t *testing.T) {
	rec := loadRecording(t)
	path := "/v1/missions/" + rec.MissionID + "/graph"
	c := New(recordedServer(t, rec, map[string]string{path: "tampered-graph.json"}).URL, rec.Token)
	_, err := c.MissionGraph(context.Background(), rec.MissionID, "")
	if !errors.Is(err, ErrInvalidGraph) || !strings.Contains(err.Error(), "its target is no node of the graph") {
		t.Fatalf("tampered: %v", err)
	}
}

func TestTopologyChecks(t *testing.T) {
	good := read(t, "mission-graph.json")
	cases := map[string]struct {
		spoil func(map[string]any)
		words string
	}{
		"schema":  {func(g map[string]any) { g["schema_version"] = "rho.graph/v2" }, "schema_version"},
		"kind":    {func(g map[string]any) { first(g, "nodes")["kind"] = "magic" }, "unknown kind"},
		"edge":    {func(g map[string]any) { first(g, "edges")["kind"] = "magic" }, "unknown kind"},
		"type":    {func(g map[string]any) { first(g, "events")["type"] = "magic" }, "unknown type"},
		"source":  {func(g map[string]any) { first(g, "edges")["from"].(map[string]any)["kind"] = "policy" }, "its source is no node"},
		"subject": {func(g map[string]any) { first(g, "events")["subject"].(map[string]any)["id"] = "ghost" }, "its subject is no node"},
		"twice":   {func(g map[string]any) { g["nodes"] = append(g["nodes"].([]any), first(g, "nodes")) }, "defined more than once"},
		"list":    {func(g map[string]any) { g["edges"] = map[string]any{} }, "edges is not a list"},
	}
	for name, tc := range cases {
		var graph map[string]any
		json.Unmarshal(good, &graph)
		tc.spoil(graph)
		data, _ := json.Marshal(graph)
		if _, err := ValidateGraph(data); !errors.Is(err, ErrInvalidGraph) || !strings.Contains(err.Error(), tc.words) {
			t.Errorf("%s: %v", name, err)
		}
	}
	if _, err := ValidateGraph([]byte("[]")); !errors.Is(err, ErrInvalidGraph) {
		t.Error("a list is no graph")
	}
	if _, err := ValidateGraph(good); err != nil {
		t.Error(err)
	}
}

func first(graph map[string]any, list string) map[string]any {
	return graph[list].([]any)[0].(map[string]any)
}

func TestFollowTheRecordedStream(t *testing.T) {
	rec := loadRecording(t)
	c := New(recordedServer(t, rec, nil).URL, rec.Token)
	var events []Event
	err := c.Follow(context.Background(), rec.MissionID, func(e Event) error {
		events = append(events, e)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	var ids, want []int
	for _, e := range events {
		if e.Kind == "journal" {
			ids = append(ids, e.ID)
		}
	}
	for _, m := range regexp.MustCompile(`(?m)^id: (\d+)$`).FindAllStringSubmatch(string(read(t, "events.txt")), -1) {
		n, _ := strconv.Atoi(m[1])
		want = append(want, n)
	}
	sort.Ints(want)
	if !reflect.DeepEqual(ids, want) || events[len(events)-2].Kind != "mission" || events[len(events)-1].Kind != "end" {
		t.Fatalf("events: %v, want %v", ids, want)
	}
	if events[len(events)-1].Data["status"] != "partial" {
		t.Fatalf("end: %v", events[len(events)-1].Data)
	}
}
