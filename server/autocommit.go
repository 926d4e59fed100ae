package server

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/dumbodb/dumbodb/mongoerr"
	"github.com/dumbodb/dumbodb/storage"
	"github.com/dumbodb/dumbodb/value"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// Automatic commits (docs/design/auto-commit.md): with --autoCommit, or
// a database's dumboConfig autoCommit, every command that changed a
// branch commits it before it answers. Commits are grouped per branch:
// the first writer that needs one makes it, and the writers that finish
// meanwhile are committed together by the next.

// autoCommitSetting names the settings-file document of the databases'
// switches (docs/format/settings.md).
const autoCommitSetting = "autoCommit"

// Bounds of an automatic commit's message: one command's text, and the
// commands a grouped commit lists.
const (
	maxAutoCommitCommand = 1 << 10
	maxAutoCommitLines   = 100
)

// autoCommits are the server's commit groups, one per branch written.
type autoCommits struct {
	mu     sync.Mutex
	groups map[branchKey]*commitGroup
}

type branchKey struct{ db, branch string }

// commitGroup is one branch's writers waiting for a commit (each hears
// of it on its channel), and whether a round of commits is running.
type commitGroup struct {
	pending []chan error
	leading bool
}

// writtenBranch is a branch a command changed.
type writtenBranch struct {
	d      *storage.Database
	branch string
}

// noteWrite records that the command changed a branch, once.
func (r *request) noteWrite(d *storage.Database, branch string) {
	for _, w := range r.wrote {
		if w.d == d && w.branch == branch {
			return
		}
	}
	r.wrote = append(r.wrote, writtenBranch{d: d, branch: branch})
}

// autoCommitOn reports whether a database's writes are commits: its own
// switch, else --autoCommit.
func (s *Server) autoCommitOn(db string) bool {
	if v, ok := s.engine.Setting(autoCommitSetting); ok {
		if on, ok := v.Document().Lookup(db).BooleanOK(); ok {
			return on
		}
	}
	return s.cfg.AutoCommit
}

// commitWrites commits each branch the command changed where automatic
// commits are on (its writes carry its note: commandNote). A commit
// that fails leaves the write done: the reply says so in a
// writeConcernError.
func (r *request) commitWrites(reply bsoncore.Document) bsoncore.Document {
	for _, w := range r.wrote {
		if !r.c.s.autoCommitOn(w.d.Name()) {
			continue
		}
		if err := r.c.s.autoCommit.commit(r.ctx, w); err != nil {
			me := toMongoErr(err)
			return withWriteConcernError(reply, bsoncore.NewDocumentBuilder().
				AppendInt32("code", int32(mongoerr.OperationFailed)).
				AppendString("codeName", mongoerr.OperationFailed.Name()).
				AppendString("errmsg", "the automatic commit of the write failed: "+me.Msg).Build())
		}
	}
	return reply
}

// commandNote is the note that describes the command's writes for the
// commit that will hold them, where automatic commits are on (nil:
// off). It is made once, before the write takes its branch's lock.
func (r *request) commandNote(d *storage.Database) *storage.WriteNote {
	if !r.c.s.autoCommitOn(d.Name()) {
		return nil
	}
	if r.note == nil {
		r.note = &storage.WriteNote{Author: r.autoCommitAuthor(), Message: r.autoCommitMessage()}
	}
	return r.note
}

// autoCommitMessage is the command as the shell prints it, without its
// generic fields, cut at maxAutoCommitCommand: an array (an insert's
// documents) is printed element by element only as far as that.
func (r *request) autoCommitMessage() string {
	var b strings.Builder
	b.WriteString("{ ")
	els, _ := r.cmd.Elements()
	first := true
	for _, el := range els {
		if genericFields[el.Key()] {
			continue
		}
		if !first {
			b.WriteString(", ")
		}
		first = false
		b.WriteString(el.Key() + ": ")
		writeBounded(&b, el.Value())
		if b.Len() > maxAutoCommitCommand {
			break
		}
	}
	if b.Len() > maxAutoCommitCommand {
		return strings.ToValidUTF8(b.String()[:maxAutoCommitCommand], "") + " …"
	}
	b.WriteString(" }")
	return b.String()
}

// writeBounded prints v, an array only until the text is past
// maxAutoCommitCommand.
func writeBounded(b *strings.Builder, v bsoncore.Value) {
	arr, ok := v.ArrayOK()
	if !ok {
		b.WriteString(value.Format(v))
		return
	}
	vals, _ := arr.Values()
	b.WriteString("[ ")
	for i, e := range vals {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(value.Format(e))
		if b.Len() > maxAutoCommitCommand {
			return
		}
	}
	b.WriteString(" ]")
}

// autoCommitAuthor is the logged-in user, or "" (the server's author).
func (r *request) autoCommitAuthor() string {
	var o storage.CommitOptions
	if err := r.authorAs(&o); err != nil {
		return ""
	}
	return o.Author
}

// commit returns once a commit of w's branch holds what was published on
// it before the call: made by this writer, or by the one leading its
// group.
func (a *autoCommits) commit(ctx context.Context, w writtenBranch) error {
	done := make(chan error, 1)
	key := branchKey{db: w.d.Name(), branch: w.branch}
	a.mu.Lock()
	if a.groups == nil {
		a.groups = map[branchKey]*commitGroup{}
	}
	g := a.groups[key]
	if g == nil {
		g = &commitGroup{}
		a.groups[key] = g
	}
	g.pending = append(g.pending, done)
	lead := !g.leading
	g.leading = true
	a.mu.Unlock()
	if lead {
		// Apart from the request: under steady writes the group has
		// pending writers round after round, and its first one must not
		// wait for all of them to answer its own client.
		go a.lead(w, key, g)
	}
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// lead commits the group's pending writers, round after round, until
// none is left. Its commits outlive the request that started it, so
// they run on their own context.
func (a *autoCommits) lead(w writtenBranch, key branchKey, g *commitGroup) {
	for {
		a.mu.Lock()
		batch := g.pending
		g.pending = nil
		if len(batch) == 0 {
			g.leading = false
			delete(a.groups, key)
			a.mu.Unlock()
			return
		}
		a.mu.Unlock()
		err := commitBatch(w)
		for _, done := range batch {
			done <- err
		}
	}
}

// commitBatch makes one commit of the branch, for the batch's writes and
// any published before it began. Nothing to commit (the writes changed
// nothing, or an earlier commit holds them) and a merge in progress (its
// commit will hold them) are no failure.
func commitBatch(w writtenBranch) error {
	_, err := w.d.Commit(context.Background(), w.branch, storage.CommitOptions{Describe: describeWrites})
	if errors.Is(err, storage.ErrNothingToCommit) || errors.Is(err, storage.ErrMergeInProgress) {
		return nil
	}
	return err
}

// describeWrites is an automatic commit's message and author, from the
// notes of the writes it holds: one command's text, or the count and a
// line per command with its author. The author is the first command's.
// A commit without notes holds writes no command noted (made while
// automatic commits were off, or recovered after a restart).
func describeWrites(notes []storage.WriteNote) (message, author string) {
	switch len(notes) {
	case 0:
		return "changes made without an automatic commit", ""
	case 1:
		return notes[0].Message, notes[0].Author
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%d writes\n", len(notes))
	for i, n := range notes {
		if i == maxAutoCommitLines {
			fmt.Fprintf(&b, "\n… and %d more", len(notes)-i)
			break
		}
		fmt.Fprintf(&b, "\n%s: %s", cmp.Or(n.Author, "(server)"), n.Message)
	}
	return b.String(), notes[0].Author
}

// noteTransactionWrites records the branches a committed transaction
// changed.
func (r *request) noteTransactionWrites(parts []*txnPart) {
	for _, p := range parts {
		if d, err := r.c.s.engine.Database(r.ctx, p.db, false); err == nil && d != nil {
			r.noteWrite(d, p.st.Branch())
		}
	}
}
