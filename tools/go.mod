// The tools `make spec` builds from the Go module proxy (cmd/dumbospec does):
// the Go driver v1, whose unified test runner (the test package
// mongo/integration/unified) and spec tests (testdata/) it runs. The
// requirements include the runner's test-only dependencies, which
// `go mod tidy` would drop; change the pin with
// `go get -t go.mongodb.org/mongo-driver/mongo/integration/unified@VERSION`.
module dumbodb/tools

go 1.26.8

require (
	github.com/davecgh/go-spew v1.1.1 // indirect
	github.com/golang/snappy v0.0.4 // indirect
	github.com/klauspost/compress v1.16.7 // indirect
	github.com/montanaflynn/stats v0.7.1 // indirect
	github.com/xdg-go/pbkdf2 v1.0.0 // indirect
	github.com/xdg-go/scram v1.1.2 // indirect
	github.com/xdg-go/stringprep v1.0.4 // indirect
	github.com/youmark/pkcs8 v0.0.0-20240726163527-a2c0da244d78 // indirect
	go.mongodb.org/mongo-driver v1.17.10 // indirect
	golang.org/x/crypto v0.26.0 // indirect
	golang.org/x/sync v0.8.0 // indirect
	golang.org/x/text v0.17.0 // indirect
)
