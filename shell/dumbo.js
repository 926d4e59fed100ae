// DumboDB's version control from mongosh: load this file, then use the
// helpers on any database (`db` below), each printing a readable table
// and returning the server's reply.
//
//   mongosh mongodb://localhost:27017/shop --shell shell/dumbo.js
//   // or, inside mongosh: load("shell/dumbo.js")
//
//   db.commit("message")              commit the branch's working set
//   db.branches()                     branches: head, ahead/behind main, message
//   db.branch("name"[, "from"])       create a branch (at from, default here)
//   db.checkout("name")               make `db` the branch (use shop@name)
//   db.log({limit, collection, _id})  the history, newest first
//   db.diff([from[, to]])             what changed (default: HEAD to the working set)
//   db.merge("branch"[, options])     merge a branch in; conflicts are listed
//   db.conflicts()                    a stopped merge's conflicts
//   db.resolve(coll, _id, "ours"|"theirs"|document)
//   db.merge({continue: 1}) / db.merge({abort: 1})
//   db.tags()                         tags
(function () {
  const proto = Object.getPrototypeOf(db);

  // baseName is the database's name without its revision.
  function baseName(d) { return d.getName().split("@")[0]; }

  // run runs a command and throws the server's error as mongosh does.
  function run(d, cmd) {
    const reply = d.runCommand(cmd);
    if (!reply.ok) {
      const err = new Error(reply.errmsg + " (" + reply.codeName + ")");
      err.code = reply.code;
      err.codeName = reply.codeName;
      err.reply = reply;
      throw err;
    }
    return reply;
  }

  function short(id) { return id ? String(id).slice(0, 8) : ""; }

  function json(v, max) {
    let s = EJSON.stringify(v, { relaxed: true });
    if (s === undefined) s = "(missing)";
    return max && s.length > max ? s.slice(0, max - 1) + "…" : s;
  }

  function when(d) { return d instanceof Date ? d.toISOString().replace("T", " ").replace(/\.\d+Z$/, "Z") : String(d); }

  // table prints rows (arrays of strings) under a header, in columns.
  function table(header, rows) {
    if (rows.length === 0) { print("(none)"); return; }
    const all = [header].concat(rows.map((r) => r.map((c) => String(c))));
    const widths = header.map((_, i) => Math.max(...all.map((r) => r[i].length)));
    const line = (r) => r.map((c, i) => (i === r.length - 1 ? c : c.padEnd(widths[i]))).join("  ").trimEnd();
    print(line(header));
    print(widths.map((w) => "-".repeat(w)).join("  "));
    all.slice(1).forEach((r) => print(line(r)));
  }

  proto.commit = function (message, options) {
    const reply = run(this, Object.assign({ dumboCommit: 1, message: message }, options || {}));
    print("committed " + short(reply.commitId) + " on " + reply.branch + ": " + reply.message);
    return reply;
  };

  proto.branches = function () {
    const list = run(this, { dumboBranch: 1 }).branches;
    const local = list.filter((b) => !b.remote).map((b) => b.name);
    const status = {};
    if (local.includes("main") && local.length > 1) {
      run(this, { dumboBranchStatus: 1, base: "main", targets: local.filter((n) => n !== "main") })
        .statuses.forEach((s) => { status[s.target] = s.ahead + " / " + s.behind; });
    }
    const here = this.getName().includes("@") ? this.getName().split("@")[1] : "main";
    table(["", "branch", "head", "ahead / behind main", "message"], list.map((b) => [
      b.name === here ? "*" : "", b.name + (b.remote ? " (remote)" : ""), short(b.commitId),
      b.name === "main" ? "-" : (status[b.name] || ""), b.head ? b.head.message : ""]));
    return list;
  };

  proto.branch = function (name, from) {
    const at = from ? this.getSiblingDB(baseName(this) + "@" + from) : this;
    const reply = run(at, { dumboBranch: 1, branch: name });
    print("branch " + name + " at " + short(reply.commitId));
    return reply;
  };

  // checkout makes the shell's `db` the branch: each name of a database
  // addresses a revision, so this is `use shop@name` (and `use shop` for
  // main).
  proto.checkout = function (name) {
    const target = name === "main" ? baseName(this) : baseName(this) + "@" + name;
    run(this.getSiblingDB(target), { dumboStatus: 1 }); // the branch must exist
    globalThis.db = this.getSiblingDB(target);
    print("switched to " + target);
    return globalThis.db;
  };

  proto.log = function (options) {
    const reply = run(this, Object.assign({ dumboLog: 1, limit: 20 }, options || {}));
    table(["commit", "time", "author", "message"], reply.commits.map((c) => [
      short(c.commitId), when(c.timestamp), c.author,
      (c.refs && c.refs.length ? "(" + c.refs.join(", ") + ") " : "") + (c.parents.length > 1 ? "[merge] " : "") + c.message]));
    if (reply.next) print("more: db.log({after: " + JSON.stringify(reply.next) + "})");
    return reply;
  };

  proto.diff = function (from, to, options) {
    const cmd = Object.assign({ dumboDiff: 1 }, options || {});
    if (from) cmd.from = from;
    if (to) cmd.to = to;
    const reply = run(this, cmd);
    const rows = [];
    reply.collections.forEach((c) => {
      c.added.forEach((d) => rows.push([c.name, "+", json(d._id), json(d, 80)]));
      c.removed.forEach((d) => rows.push([c.name, "-", json(d._id), json(d, 80)]));
      c.modified.forEach((m) => m.changes.forEach((ch) =>
        rows.push([c.name, "~", json(m._id), ch.path + ": " + json(ch.from, 30) + " -> " + json(ch.to, 30)])));
      if (c.optionsChanged) rows.push([c.name, "~", "", "options changed"]);
      if (c.indexesChanged) rows.push([c.name, "~", "", "indexes changed"]);
      if (c.status !== "modified") rows.push([c.name, c.status === "added" ? "+" : "-", "", "collection " + c.status]);
    });
    table(["collection", "", "_id", "change"], rows);
    return reply;
  };

  proto.merge = function (branch, options) {
    const cmd = typeof branch === "string" ? Object.assign({ dumboMerge: 1, mergeIn: branch }, options || {}) : Object.assign({ dumboMerge: 1 }, branch);
    let reply;
    try {
      reply = run(this, cmd);
    } catch (e) {
      if (e.codeName !== "MergeConflict") throw e;
      print("merge stopped on conflicts: settle them with db.resolve(...), then db.merge({continue: 1}) or db.merge({abort: 1})");
      this.conflicts();
      return e.reply;
    }
    if (reply.dryRun) print(reply.upToDate ? "up to date" : reply.fastForward ? "would fast-forward" : "would merge; conflicts: " + json(reply.conflicts));
    else if (reply.upToDate) print("already up to date");
    else print((reply.fastForward ? "fast-forward to " : "merged: ") + short(reply.commitId));
    return reply;
  };

  proto.conflicts = function (collection) {
    const cmd = { dumboConflicts: 1 };
    if (collection) cmd.collection = collection;
    const reply = run(this, cmd);
    table(["collection", "_id", "ours", "theirs"], reply.conflicts.map((c) => [
      c.collection, json(c._id), c.ours ? json(c.ours, 50) : "(deleted)", c.theirs ? json(c.theirs, 50) : "(deleted)"]));
    return reply;
  };

  proto.resolve = function (collection, id, resolution) {
    const cmd = { dumboResolveConflict: 1, collection: collection, _id: id };
    if (typeof resolution === "string") cmd.resolution = resolution;
    else Object.assign(cmd, { resolution: "custom", document: resolution });
    const reply = run(this, cmd);
    print("settled " + collection + " " + json(id) + " with " + cmd.resolution);
    return reply;
  };

  proto.tags = function () {
    const reply = run(this, { dumboTag: 1 });
    table(["tag", "commit", "message"], reply.tags.map((t) => [t.name, short(t.commitId), t.message || ""]));
    return reply.tags;
  };
})();
