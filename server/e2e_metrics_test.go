package server_test

import (
	"fmt"
	"io"
	"maps"
	"net/http"
	"slices"
	"testing"

	"github.com/dumbodb/dumbodb/server"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
)

// scrape reads ts's /metrics as userinfo ("" none), parsed by
// Prometheus' own text parser; status is the HTTP status.
func scrape(t *testing.T, ts *testServer, user, password string) (map[string]*dto.MetricFamily, int) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, fmt.Sprintf("http://%s/metrics", ts.srv.HTTPAddr()), nil)
	if user != "" {
		req.SetBasicAuth(user, password)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		io.Copy(io.Discard, resp.Body)
		return nil, resp.StatusCode
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("the metrics do not parse: %v", err)
	}
	return families, resp.StatusCode
}

// metricValue is the value of a family's sample whose labels include
// those given (a counter's or gauge's value, a histogram's count).
func metricValue(families map[string]*dto.MetricFamily, name string, labels ...string) float64 {
	f := families[name]
	if f == nil {
		return -1
	}
next:
	for _, m := range f.Metric {
		for i := 0; i+1 < len(labels); i += 2 {
			found := false
			for _, l := range m.Label {
				found = found || (l.GetName() == labels[i] && l.GetValue() == labels[i+1])
			}
			if !found {
				continue next
			}
		}
		switch {
		case m.Counter != nil:
			return m.Counter.GetValue()
		case m.Gauge != nil:
			return m.Gauge.GetValue()
		case m.Histogram != nil:
			return float64(m.Histogram.GetSampleCount())
		}
	}
	return -1
}

func httpStatusOf(t *testing.T, url string) int {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

// TestMetricsMoveWithOperations: /metrics parses as Prometheus text and
// its counters move with what clients do: commands by name, failures,
// write-ahead log syncs and their batches, checkpoints, connections,
// cursors, sizes per database; /livez and /readyz answer 200, and the
// profiler is not served without HTTPDebug.
func TestMetricsMoveWithOperations(t *testing.T) {
	ts := startServer(t, withHTTP)
	c := ts.client()
	coll := c.Database("shop").Collection("items")
	before, _ := scrape(t, ts, "", "")
	for i := range 5 {
		if _, err := coll.InsertOne(ctx, bson.M{"_id": i}); err != nil {
			t.Fatal(err)
		}
	}
	_, err := coll.InsertOne(ctx, bson.M{"_id": 0})
	if err == nil {
		t.Fatal("a duplicate _id was inserted")
	}
	cur, err := coll.Find(ctx, bson.M{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cur.Close(ctx)
	mustRun(t, c.Database("shop"), bson.D{{Key: "dumboCommit", Value: 1}, {Key: "message", Value: "m"}})
	after, status := scrape(t, ts, "", "")
	if status != http.StatusOK {
		t.Fatalf("/metrics answered %d", status)
	}
	moved := func(name string, labels ...string) float64 {
		return metricValue(after, name, labels...) - max(0, metricValue(before, name, labels...))
	}
	if d := moved("dumbodb_command_duration_seconds", "command", "insert"); d != 6 {
		t.Errorf("insert commands counted %v, want 6", d)
	}
	// The duplicate key is a write error in an ok: 1 reply; a failure is
	// a command that answered ok: 0.
	if d := moved("dumbodb_command_failures_total", "command", "insert"); d > 0 {
		t.Errorf("insert failures %v", d)
	}
	if d := moved("dumbodb_command_duration_seconds", "command", "dumboCommit", "family", "version control"); d != 1 {
		t.Errorf("dumboCommit counted %v", d)
	}
	if d := moved("dumbodb_wal_sync_duration_seconds"); d < 1 {
		t.Errorf("log syncs counted %v", d)
	}
	if d := moved("dumbodb_wal_records_per_sync"); d < 1 {
		t.Errorf("records per sync observed %v times", d)
	}
	if d := moved("dumbodb_checkpoint_duration_seconds"); d < 1 {
		t.Errorf("checkpoints counted %v (a commit checkpoints)", d)
	}
	if v := metricValue(after, "dumbodb_connections"); v < 1 {
		t.Errorf("connections %v", v)
	}
	if v := metricValue(after, "dumbodb_database_disk_bytes", "db", "shop"); v <= 0 {
		t.Errorf("shop's size on disk %v", v)
	}
	if metricValue(after, "go_goroutines") <= 0 || metricValue(after, "process_resident_memory_bytes") <= 0 {
		t.Error("the Go and process collectors are missing")
	}
	_, err = c.Database("shop").RunCommand(ctx, bson.D{{Key: "find", Value: 1}}).Raw()
	if err == nil {
		t.Fatal("find of a number ran")
	}
	if v, _ := scrape(t, ts, "", ""); metricValue(v, "dumbodb_command_failures_total", "command", "find") < 1 {
		t.Error("a failed find is not counted")
	}
	base := fmt.Sprintf("http://%s", ts.srv.HTTPAddr())
	for path, want := range map[string]int{"/livez": 200, "/readyz": 200, "/debug/pprof/": 404, "/nothing": 404} {
		if got := httpStatusOf(t, base+path); got != want {
			t.Errorf("GET %s: %d, want %d", path, got, want)
		}
	}
}

// TestMetricsUnderAccessControl: with --auth, /metrics needs a user with
// serverStatus (clusterMonitor), health checks need none; the profiler
// under HTTPDebug is as guarded as the metrics.
func TestMetricsUnderAccessControl(t *testing.T) {
	ts := startServer(t, withAuth, withHTTP, func(c *server.Config) { c.HTTPDebug = true })
	createRoot(t, ts)
	root := ts.authClient("root", "rootpw", "admin", "")
	addUser(t, root, "shop", "dev", bson.A{"readWrite"})
	addUser(t, root, "admin", "monitor", bson.A{"clusterMonitor"})
	if _, status := scrape(t, ts, "", ""); status != http.StatusUnauthorized {
		t.Errorf("/metrics without credentials: %d", status)
	}
	if _, status := scrape(t, ts, "monitor", "wrong"); status != http.StatusUnauthorized {
		t.Errorf("/metrics with a wrong password: %d", status)
	}
	req, _ := http.NewRequest(http.MethodGet, fmt.Sprintf("http://%s/metrics", ts.srv.HTTPAddr()), nil)
	req.SetBasicAuth("dev", "pw")
	req.Header.Set("X-Dumbo-Auth-Source", "shop")
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != http.StatusForbidden {
		t.Errorf("/metrics for a readWrite user: %v %v", resp.StatusCode, err)
	}
	if _, status := scrape(t, ts, "monitor", "pw"); status != http.StatusOK {
		t.Errorf("/metrics for clusterMonitor: %d", status)
	}
	base := fmt.Sprintf("http://%s", ts.srv.HTTPAddr())
	for path, want := range map[string]int{"/livez": 200, "/readyz": 200, "/debug/pprof/": 401} {
		if got := httpStatusOf(t, base+path); got != want {
			t.Errorf("GET %s: %d, want %d", path, got, want)
		}
	}
}

// TestServerStatusFollowsMongodsShape: the sections exporters read
// (network, opLatencies, asserts, metrics.commands, transactions,
// globalLock, locks) move with what clients do, and sections turned off are
// left out.
func TestServerStatusFollowsMongodsShape(t *testing.T) {
	c := startServer(t).client()
	admin := c.Database("admin")
	status := func() bson.M { return mustRun(t, admin, bson.D{{Key: "serverStatus", Value: 1}}) }
	num := func(doc bson.M, path ...string) int64 {
		switch v := get(doc, path...).(type) {
		case int64:
			return v
		case int32:
			return int64(v)
		}
		t.Fatalf("serverStatus.%v is %T", path, get(doc, path...))
		return 0
	}
	before := status()
	coll := c.Database("shop").Collection("items")
	for i := range 3 {
		if _, err := coll.InsertOne(ctx, bson.M{"_id": i}); err != nil {
			t.Fatal(err)
		}
	}
	if err := coll.FindOne(ctx, bson.M{}).Err(); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Database("shop").RunCommand(ctx, bson.D{{Key: "find", Value: 1}}).Raw(); err == nil {
		t.Fatal("find of a number ran")
	}
	sess, err := c.StartSession()
	if err != nil {
		t.Fatal(err)
	}
	defer sess.EndSession(ctx)
	for _, commit := range []bool{true, false} {
		sctx := mongo.NewSessionContext(ctx, sess)
		if err := sess.StartTransaction(); err != nil {
			t.Fatal(err)
		}
		if _, err := coll.InsertOne(sctx, bson.M{"x": commit}); err != nil {
			t.Fatal(err)
		}
		if commit {
			err = sess.CommitTransaction(ctx)
		} else {
			err = sess.AbortTransaction(ctx)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	after := status()
	for _, c := range []struct {
		path []string
		min  int64
	}{
		{[]string{"metrics", "commands", "insert", "total"}, 5},
		{[]string{"metrics", "commands", "find", "failed"}, 1},
		{[]string{"asserts", "user"}, 1},
		{[]string{"opLatencies", "writes", "ops"}, 5},
		{[]string{"opLatencies", "reads", "ops"}, 2},
		{[]string{"opLatencies", "transactions", "ops"}, 2},
		{[]string{"network", "numRequests"}, 10},
		{[]string{"network", "bytesIn"}, 500},
		{[]string{"network", "bytesOut"}, 500},
		{[]string{"transactions", "totalStarted"}, 2},
		{[]string{"transactions", "totalCommitted"}, 1},
		{[]string{"transactions", "totalAborted"}, 1},
		{[]string{"locks", "Global", "acquireCount", "w"}, 4},
		{[]string{"locks", "Database", "acquireCount", "W"}, 4},
	} {
		if d := num(after, c.path...) - num(before, c.path...); d < c.min {
			t.Errorf("serverStatus.%v moved by %d, want at least %d", c.path, d, c.min)
		}
	}
	if num(after, "globalLock", "totalTime") <= 0 || num(after, "transactions", "currentOpen") != 0 {
		t.Errorf("globalLock %v, transactions %v", after["globalLock"], after["transactions"])
	}
	trimmed := mustRun(t, admin, bson.D{{Key: "serverStatus", Value: 1}, {Key: "metrics", Value: 0}, {Key: "opLatencies", Value: false}})
	if trimmed["metrics"] != nil || trimmed["opLatencies"] != nil || trimmed["network"] == nil {
		t.Errorf("serverStatus with metrics: 0, opLatencies: false kept %v", slices.Collect(maps.Keys(trimmed)))
	}
}

// TestMetricsOfConflictsAndChangeStreams: a merge that stops at one
// conflict adds one to dumbodb_merge_conflicts_total, and an event a
// change stream delivers is one observation of
// dumbodb_change_stream_lag_seconds.
func TestMetricsOfConflictsAndChangeStreams(t *testing.T) {
	ts := startServer(t, withHTTP)
	c := ts.client()
	shop := c.Database("shop")
	stream, err := shop.Collection("items").Watch(ctx, mongo.Pipeline{})
	if err != nil {
		t.Fatal(err)
	}
	defer stream.Close(ctx)
	if _, err := shop.Collection("items").InsertOne(ctx, bson.M{"_id": 1, "v": 0}); err != nil {
		t.Fatal(err)
	}
	if !stream.Next(ctx) {
		t.Fatalf("no change event: %v", stream.Err())
	}
	mustRun(t, shop, bson.D{{Key: "dumboCommit", Value: 1}, {Key: "message", Value: "base"}})
	mustRun(t, shop, bson.D{{Key: "dumboBranch", Value: 1}, {Key: "branch", Value: "other"}})
	for db, v := range map[string]int{"shop": 1, "shop@other": 2} {
		if _, err := c.Database(db).Collection("items").UpdateOne(ctx, bson.M{"_id": 1}, bson.M{"$set": bson.M{"v": v}}); err != nil {
			t.Fatal(err)
		}
		mustRun(t, c.Database(db), bson.D{{Key: "dumboCommit", Value: 1}, {Key: "message", Value: "change"}})
	}
	_, err = run(t, shop, bson.D{{Key: "dumboMerge", Value: 1}, {Key: "mergeIn", Value: "other"}})
	wantCode(t, err, 20002, "MergeConflict")
	m, _ := scrape(t, ts, "", "")
	if v := metricValue(m, "dumbodb_merge_conflicts_total"); v != 1 {
		t.Errorf("dumbodb_merge_conflicts_total %v, want 1", v)
	}
	if v := metricValue(m, "dumbodb_change_stream_lag_seconds"); v < 1 {
		t.Errorf("dumbodb_change_stream_lag_seconds counts %v events", v)
	}
}

// TestReadyzWhileRecovering: the HTTP listener opened before recovery
// answers /livez 200 and /readyz 503 "recovering"; the server then takes
// it over on the same address, and /readyz answers 200.
func TestReadyzWhileRecovering(t *testing.T) {
	early, err := server.ListenEarlyHTTP("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	base := "http://" + early.Addr().String()
	if httpStatusOf(t, base+"/livez") != http.StatusOK || httpStatusOf(t, base+"/readyz") != http.StatusServiceUnavailable ||
		httpStatusOf(t, base+"/metrics") != http.StatusServiceUnavailable {
		t.Fatal("the early listener does not answer as a recovering server")
	}
	ts := startServer(t, func(c *server.Config) { c.HTTPAddress, c.EarlyHTTP = early.Addr().String(), early })
	if got := ts.srv.HTTPAddr().String(); got != early.Addr().String() {
		t.Errorf("the server listens on %s, not the early listener's %s", got, early.Addr())
	}
	if s := httpStatusOf(t, base+"/readyz"); s != http.StatusOK {
		t.Errorf("/readyz after the server took over: %d", s)
	}
}
