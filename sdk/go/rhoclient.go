// Package rhoclient is a Go client of `rho serve`: missions, validated graphs, log tails and
// live follow over Server-Sent Events. Standard library only.
//
//	c := rhoclient.New("http://127.0.0.1:8765", token)
//	rows, err := c.Missions(ctx)
//	graph, err := c.MissionGraph(ctx, "latest", "")   // validated before it is returned
//	err = c.Follow(ctx, "latest", func(e rhoclient.Event) error { fmt.Println(e.Kind); return nil })
//
// Errors are *Error values; errors.Is(err, ErrAuth), ErrNotFound, ErrRequest and ErrInvalidGraph
// tell their kinds (401, 404, 400 or an argument that cannot be sent, a graph that breaks the
// rho.graph/v1 topology). The same calls and errors as the Python and TypeScript clients.
package rhoclient

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
)

// The kinds of error, for errors.Is.
var (
	ErrAuth         = errors.New("auth")
	ErrNotFound     = errors.New("not found")
	ErrRequest      = errors.New("bad request")
	ErrInvalidGraph = errors.New("invalid graph")
)

// Error is every failure of a call; Status is the HTTP status, 0 when no answer came.
type Error struct {
	Message string
	Status  int
	kind    error
}

func (e *Error) Error() string { return e.Message }

// Is makes errors.Is(err, ErrAuth) and the others work.
func (e *Error) Is(target error) bool { return e.kind != nil && target == e.kind }

// MissionSummary is one mission of GET /v1/missions.
type MissionSummary struct {
	ID          string         `json:"id"`
	Status      string         `json:"status"`
	StartedAt   *string        `json:"started_at"`
	CompletedAt *string        `json:"completed_at"`
	Features    int            `json:"features"`
	Counts      map[string]int `json:"counts"`
	Waves       int            `json:"waves"`
	JoinedWaves int            `json:"joined_waves"`
	// What it is about (its prompt, or its first tasks' subjects), and where it was merged.
	What   string  `json:"what"`
	Merged *string `json:"merged"`
}

// Ref names a node: its kind and id.
type Ref struct {
	Kind string `json:"kind"`
	ID   string `json:"id"`
}

// Node, Edge and GraphEvent keep what the topology checks read; Raw holds the whole fact.
type Node struct {
	ID         string            `json:"id"`
	Kind       string            `json:"kind"`
	Attributes map[string]string `json:"attributes"`
}

type Edge struct {
	ID   string `json:"id"`
	Kind string `json:"kind"`
	From *Ref   `json:"from"`
	To   *Ref   `json:"to"`
}

type GraphEvent struct {
	ID      string `json:"id"`
	Type    string `json:"type"`
	Subject *Ref   `json:"subject"`
}

// Graph is a validated rho.graph/v1 document; Raw is the server's JSON as it came.
type Graph struct {
	SchemaVersion string `json:"schema_version"`
	GeneratedAt   string `json:"generated_at"`
	Scope         struct {
		RepositoryID *string `json:"repository_id"`
	} `json:"scope"`
	Nodes  []Node          `json:"nodes"`
	Edges  []Edge          `json:"edges"`
	Events []GraphEvent    `json:"events"`
	Raw    json.RawMessage `json:"-"`
}

// Event is one event of a followed mission: "mission" (the whole mission.json), "journal" (one
// journal.jsonl record; ID its line number), "error", or "end" ({"status": ...}, the last one).
type Event struct {
	Kind string
	Data map[string]any
	ID   int // 0 unless Kind is "journal"
}

var (
	nodeKinds  = []string{"system", "knowledge", "execution", "policy", "quality", "operations"}
	edgeKinds  = []string{"contains", "depends_on", "references", "produced", "governed_by", "validated_by"}
	eventTypes = []string{"created", "updated", "transitioned", "observed", "deleted"}
	missionID  = regexp.MustCompile(`^[0-9a-f]{8}$`)
)

const reconnects = 5

// Client calls one `rho serve`.
type Client struct {
	base  string
	token string
	HTTP  *http.Client
}

// New returns a client of the server at baseURL, sending token.
func New(baseURL, token string) *Client {
	return &Client{base: strings.TrimRight(baseURL, "/"), token: token, HTTP: &http.Client{}}
}

// Missions lists the repository's missions, newest first.
func (c *Client) Missions(ctx context.Context) ([]MissionSummary, error) {
	var body struct {
		Missions []MissionSummary `json:"missions"`
	}
	if err := c.getJSON(ctx, "/v1/missions", nil, &body); err != nil {
		return nil, err
	}
	return body.Missions, nil
}

// Mission returns a mission's mission.json ("latest": the mission started last).
func (c *Client) Mission(ctx context.Context, id string) (map[string]any, error) {
	path, err := missionPath(id, "")
	if err != nil {
		return nil, err
	}
	var body map[string]any
	if err := c.getJSON(ctx, path, nil, &body); err != nil {
		return nil, err
	}
	if body["schema_version"] != "rho.mission/v1" {
		return nil, &Error{Message: "the server's mission is not a mission document"}
	}
	return body, nil
}

// MissionGraph returns a mission's graph, validated; repository ("": none) scopes it as
// `rho graph export --repository`.
func (c *Client) MissionGraph(ctx context.Context, id, repository string) (*Graph, error) {
	path, err := missionPath(id, "/graph")
	if err != nil {
		return nil, err
	}
	return c.graph(ctx, path, repository)
}

// TaskGraph returns the task store's graph, validated.
func (c *Client) TaskGraph(ctx context.Context, repository string) (*Graph, error) {
	return c.graph(ctx, "/v1/tasks/graph", repository)
}

// LogTail returns the last lines of a feature's log; nil when it wrote none.
func (c *Client) LogTail(ctx context.Context, id, feature string, lines int) ([]string, error) {
	path, err := missionPath(id, "/logs/"+url.PathEscape(feature))
	if err != nil {
		return nil, err
	}
	var body struct {
		Lines []string `json:"lines"`
	}
	query := url.Values{"tail": {strconv.Itoa(lines)}}
	if err := c.getJSON(ctx, path, query, &body); err != nil {
		return nil, err
	}
	return body.Lines, nil
}

// Follow calls each with the mission's events as they happen, until it ends (or each returns
// an error, which Follow returns). A cut connection is opened again from the last journal
// record received (Last-Event-ID), so no record is missed or repeated.
func (c *Client) Follow(ctx context.Context, id string, each func(Event) error) error {
	path, err := missionPath(id, "/events")
	if err != nil {
		return err
	}
	last := 0
	for try := 0; try <= reconnects; try++ {
		headers := map[string]string{"Accept": "text/event-stream"}
		if last > 0 {
			headers["Last-Event-ID"] = strconv.Itoa(last)
		}
		response, err := c.get(ctx, path, nil, headers)
		if err != nil {
			return err
		}
		ended, err := readEvents(response.Body, func(event Event) error {
			if event.Kind == "journal" && event.ID > 0 {
				if event.ID <= last {
					return nil // sent before the cut
				}
				last = event.ID
			}
			return each(event)
		})
		response.Body.Close()
		if err != nil || ended {
			return err
		}
	}
	return &Error{Message: fmt.Sprintf("the event stream of mission %s ended before the mission", id)}
}

// ValidateGraph checks a graph's topology as the Python client's graph.validate_graph does for
// it: the schema version, known kinds, each id once, every edge endpoint and event subject a
// node of the graph.
func ValidateGraph(data []byte) (*Graph, error) {
	fail := func(format string, args ...any) (*Graph, error) {
		return nil, invalid(format, args...)
	}
	var shape map[string]json.RawMessage
	if err := json.Unmarshal(data, &shape); err != nil {
		return fail("not a JSON object")
	}
	for _, name := range []string{"nodes", "edges", "events"} {
		var list []json.RawMessage
		if err := json.Unmarshal(shape[name], &list); err != nil || list == nil {
			return fail("%s is not a list", name)
		}
	}
	var graph Graph
	if err := json.Unmarshal(data, &graph); err != nil {
		return fail("%v", err)
	}
	if graph.SchemaVersion != "rho.graph/v1" {
		return fail("schema_version is not rho.graph/v1")
	}
	known := map[Ref]bool{}
	// claim checks one fact's word (kind or type) and that its id comes once in its list.
	claim := func(fact, id, field, word string, words []string, seen map[string]bool) error {
		if !contains(words, word) {
			return invalid("%s %q has an unknown %s %q", fact, id, field, word)
		}
		if seen[id] {
			return invalid("%s %q is defined more than once", fact, id)
		}
		seen[id] = true
		return nil
	}
	resolve := func(fact, id, role string, ref *Ref) error {
		if ref == nil || !known[*ref] {
			return invalid("%s %q: its %s is no node of the graph", fact, id, role)
		}
		return nil
	}
	seen := map[string]bool{}
	for _, node := range graph.Nodes {
		if err := claim("node", node.ID, "kind", node.Kind, nodeKinds, seen); err != nil {
			return nil, err
		}
		known[Ref{node.Kind, node.ID}] = true
	}
	seen = map[string]bool{}
	for _, edge := range graph.Edges {
		if err := claim("edge", edge.ID, "kind", edge.Kind, edgeKinds, seen); err != nil {
			return nil, err
		}
		if err := resolve("edge", edge.ID, "source", edge.From); err != nil {
			return nil, err
		}
		if err := resolve("edge", edge.ID, "target", edge.To); err != nil {
			return nil, err
		}
	}
	seen = map[string]bool{}
	for _, event := range graph.Events {
		if err := claim("event", event.ID, "type", event.Type, eventTypes, seen); err != nil {
			return nil, err
		}
		if err := resolve("event", event.ID, "subject", event.Subject); err != nil {
			return nil, err
		}
	}
	graph.Raw = append(json.RawMessage(nil), data...)
	return &graph, nil
}

func invalid(format string, args ...any) *Error {
	return &Error{Message: "the server's graph is not valid: " + fmt.Sprintf(format, args...), kind: ErrInvalidGraph}
}

func (c *Client) graph(ctx context.Context, path, repository string) (*Graph, error) {
	var query url.Values
	if repository != "" {
		query = url.Values{"repository": {repository}}
	}
	response, err := c.get(ctx, path, query, nil)
	if err != nil {
		return nil, err
	}
	defer response.Body.Close()
	data, err := io.ReadAll(response.Body)
	if err != nil {
		return nil, transport(err)
	}
	return ValidateGraph(data)
}

func (c *Client) getJSON(ctx context.Context, path string, query url.Values, into any) error {
	response, err := c.get(ctx, path, query, nil)
	if err != nil {
		return err
	}
	defer response.Body.Close()
	if err := json.NewDecoder(response.Body).Decode(into); err != nil {
		return &Error{Message: "the server's answer is not what the API promises: " + err.Error(), Status: response.StatusCode}
	}
	return nil
}

func (c *Client) get(ctx context.Context, path string, query url.Values, headers map[string]string) (*http.Response, error) {
	target := c.base + path
	if len(query) > 0 {
		target += "?" + query.Encode()
	}
	request, err := http.NewRequestWithContext(ctx, http.MethodGet, target, nil)
	if err != nil {
		return nil, &Error{Message: err.Error(), kind: ErrRequest}
	}
	request.Header.Set("Authorization", "Bearer "+c.token)
	for name, value := range headers {
		request.Header.Set(name, value)
	}
	response, err := c.HTTP.Do(request)
	if err != nil {
		return nil, transport(err)
	}
	if response.StatusCode < 400 {
		return response, nil
	}
	defer response.Body.Close()
	message := fmt.Sprintf("HTTP %d from %s", response.StatusCode, path)
	var body struct {
		Error *string `json:"error"`
	}
	if json.NewDecoder(response.Body).Decode(&body) == nil && body.Error != nil {
		message = *body.Error
	}
	kinds := map[int]error{401: ErrAuth, 404: ErrNotFound, 400: ErrRequest}
	return nil, &Error{Message: message, Status: response.StatusCode, kind: kinds[response.StatusCode]}
}

// readEvents calls each with every event of an SSE body; true once the "end" event came.
func readEvents(body io.Reader, each func(Event) error) (bool, error) {
	scanner := bufio.NewScanner(body)
	scanner.Buffer(make([]byte, 64*1024), 256*1024*1024) // a mission.json of 1,000 features
	fields := map[string]string{}
	lastID := ""
	for scanner.Scan() {
		line := strings.TrimSuffix(scanner.Text(), "\r")
		if line == "" {
			if id, ok := fields["id"]; ok {
				lastID = id
			}
			if _, ok := fields["data"]; ok {
				event, err := toEvent(fields, lastID)
				if err != nil {
					return false, err
				}
				if err := each(event); err != nil {
					return false, err
				}
				if event.Kind == "end" {
					return true, nil
				}
			}
			fields = map[string]string{}
			continue
		}
		if strings.HasPrefix(line, ":") {
			continue
		}
		name, value, _ := strings.Cut(line, ":")
		value = strings.TrimPrefix(value, " ")
		if previous, ok := fields["data"]; ok && name == "data" {
			value = previous + "\n" + value
		}
		fields[name] = value
	}
	if err := scanner.Err(); err != nil {
		return false, transport(err)
	}
	return false, nil
}

func toEvent(fields map[string]string, lastID string) (Event, error) {
	kind := fields["event"]
	if kind == "" {
		kind = "message"
	}
	var data map[string]any
	if err := json.Unmarshal([]byte(fields["data"]), &data); err != nil || data == nil {
		return Event{}, &Error{Message: fmt.Sprintf("the server's %s event is not a JSON object", kind)}
	}
	event := Event{Kind: kind, Data: data}
	// SSE carries the last id over to events without one: only a journal record has its own.
	if id, err := strconv.Atoi(lastID); kind == "journal" && err == nil {
		event.ID = id
	}
	return event, nil
}

func missionPath(id, rest string) (string, error) {
	if id != "latest" && !missionID.MatchString(id) {
		return "", &Error{Message: fmt.Sprintf("invalid mission id %q: 8 lowercase hex digits, or latest", id), kind: ErrRequest}
	}
	return "/v1/missions/" + id + rest, nil
}

func transport(err error) *Error {
	return &Error{Message: "rho serve did not answer: " + err.Error()}
}

func contains(words []string, word string) bool {
	for _, known := range words {
		if known == word {
			return true
		}
	}
	return false
}
