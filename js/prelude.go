package js

import (
	"sync"

	"github.com/dop251/goja"
)

// preludeSource defines, in every runtime, the BSON types mongod's
// JavaScript knows, with the constructors and methods the mongo shell
// gives them. A value's BSON payload lives in non-enumerable "__"
// properties that the converters read; what user code sees (str, t, i,
// floatApprox, toString) follows the shell. __newOid is native (runtime.go).
const preludeSource = `
(function (g) {
  function hidden(o, k, v) { Object.defineProperty(o, k, {value: v}); }
  function ctor(name, init) {
    var F = function () {
      if (!(this instanceof F)) { var o = Object.create(F.prototype); init.apply(o, arguments); return o; }
      init.apply(this, arguments);
    };
    Object.defineProperty(F, 'name', {value: name});
    return F;
  }
  g.ObjectId = ctor('ObjectId', function (s) {
    if (s === undefined) s = __newOid();
    if (typeof s !== 'string' || !/^[0-9a-fA-F]{24}$/.test(s)) throw new Error('invalid object id: ' + s);
    Object.defineProperty(this, 'str', {value: s.toLowerCase(), enumerable: true});
  });
  ObjectId.prototype.toString = function () { return 'ObjectId("' + this.str + '")'; };
  ObjectId.prototype.valueOf = function () { return this.str; };
  ObjectId.prototype.toJSON = function () { return {$oid: this.str}; };
  ObjectId.prototype.equals = function (o) { return o instanceof ObjectId && o.str === this.str; };
  ObjectId.prototype.getTimestamp = function () { return new Date(parseInt(this.str.substr(0, 8), 16) * 1000); };

  g.NumberLong = ctor('NumberLong', function (v) {
    var s = v === undefined ? '0' : String(v instanceof NumberLong ? v.__v : v);
    if (!/^-?[0-9]+$/.test(s)) { var n = Number(s); if (!isFinite(n)) throw new Error('could not convert "' + s + '" to NumberLong'); s = String(Math.trunc(n)); }
    hidden(this, '__v', s);
    Object.defineProperty(this, 'floatApprox', {value: Number(s), enumerable: true});
  });
  NumberLong.prototype.valueOf = function () { return Number(this.__v); };
  NumberLong.prototype.toNumber = NumberLong.prototype.valueOf;
  NumberLong.prototype.toString = function () {
    return Math.abs(Number(this.__v)) > 9007199254740991 ? 'NumberLong("' + this.__v + '")' : 'NumberLong(' + this.__v + ')';
  };
  NumberLong.prototype.toJSON = function () { return {$numberLong: this.__v}; };
  NumberLong.prototype.equals = function (o) { return o instanceof NumberLong && o.__v === this.__v; };

  g.NumberInt = ctor('NumberInt', function (v) { hidden(this, '__v', (v === undefined ? 0 : Number(v)) | 0); });
  NumberInt.prototype.valueOf = function () { return this.__v; };
  NumberInt.prototype.toNumber = NumberInt.prototype.valueOf;
  NumberInt.prototype.toString = function () { return 'NumberInt(' + this.__v + ')'; };
  NumberInt.prototype.toJSON = function () { return this.__v; };

  g.NumberDecimal = ctor('NumberDecimal', function (v) { hidden(this, '__v', v === undefined ? '0' : String(v)); });
  NumberDecimal.prototype.toString = function () { return 'NumberDecimal("' + this.__v + '")'; };
  NumberDecimal.prototype.valueOf = function () { return Number(this.__v); };
  NumberDecimal.prototype.toJSON = function () { return {$numberDecimal: this.__v}; };

  g.BinData = ctor('BinData', function (t, b64) {
    if (typeof t !== 'number' || t < 0 || t > 255) throw new Error('BinData subtype must be a number between 0 and 255');
    hidden(this, '__t', t); hidden(this, '__b64', String(b64));
  });
  BinData.prototype.subtype = function () { return this.__t; };
  BinData.prototype.base64 = function () { return this.__b64; };
  BinData.prototype.toString = function () { return 'BinData(' + this.__t + ',"' + this.__b64 + '")'; };
  BinData.prototype.toJSON = function () { return {$binary: {base64: this.__b64, subType: this.__t.toString(16)}}; };
  g.UUID = function (hex) { return __uuid(hex === undefined ? '' : String(hex)); };

  g.Timestamp = ctor('Timestamp', function (t, i) {
    Object.defineProperty(this, 't', {value: (t || 0) >>> 0, enumerable: true});
    Object.defineProperty(this, 'i', {value: (i || 0) >>> 0, enumerable: true});
  });
  Timestamp.prototype.getTime = function () { return this.t; };
  Timestamp.prototype.getInc = function () { return this.i; };
  Timestamp.prototype.toString = function () { return 'Timestamp(' + this.t + ', ' + this.i + ')'; };
  Timestamp.prototype.toJSON = function () { return {$timestamp: {t: this.t, i: this.i}}; };

  var minKey, maxKey;
  g.MinKey = ctor('MinKey', function () {});
  g.MaxKey = ctor('MaxKey', function () {});
  minKey = Object.create(MinKey.prototype); maxKey = Object.create(MaxKey.prototype);
  MinKey.prototype.toString = function () { return '{ "$minKey" : 1 }'; };
  MaxKey.prototype.toString = function () { return '{ "$maxKey" : 1 }'; };
  MinKey.prototype.toJSON = function () { return {$minKey: 1}; };
  MaxKey.prototype.toJSON = function () { return {$maxKey: 1}; };
  hidden(g, '__minKey', minKey); hidden(g, '__maxKey', maxKey);

  g.Code = ctor('Code', function (code) { Object.defineProperty(this, 'code', {value: String(code), enumerable: true}); });
  Code.prototype.toString = function () { return this.code; };

  g.DBPointer = ctor('DBPointer', function (ns, id) {
    Object.defineProperty(this, 'ns', {value: String(ns), enumerable: true});
    Object.defineProperty(this, 'id', {value: id, enumerable: true});
  });
  DBPointer.prototype.toString = function () { return 'DBPointer("' + this.ns + '", ' + this.id + ')'; };

  g.tojson = function (v) { return v !== null && typeof v === 'object' && v.toString !== Object.prototype.toString ? v.toString() : JSON.stringify(v); };
  g.isNumber = function (v) { return typeof v === 'number'; };
  g.isString = function (v) { return typeof v === 'string'; };
  g.isObject = function (v) { return typeof v === 'object' && v !== null; };
  g.print = function () {};
  g.printjson = function () {};
  // Native calls cannot be interrupted: those that build one large
  // value from a small input are refused past maxJSString characters.
  var rep = String.prototype.repeat, padS = String.prototype.padStart, padE = String.prototype.padEnd, fill = Array.prototype.fill;
  function method(o, name, fn) { Object.defineProperty(o, name, {value: fn, writable: true, configurable: true}); }
  function tooLong() { throw new RangeError('Invalid string length'); }
  method(String.prototype, 'repeat', function (n) { if (String(this).length * Number(n) > __maxString) tooLong(); return rep.call(this, n); });
  method(String.prototype, 'padStart', function (n, s) { if (Number(n) > __maxString) tooLong(); return padS.call(this, n, s); });
  method(String.prototype, 'padEnd', function (n, s) { if (Number(n) > __maxString) tooLong(); return padE.call(this, n, s); });
  method(Array.prototype, 'fill', function () {
    if (this.length > __maxString) throw new RangeError('Invalid array length');
    return fill.apply(this, arguments);
  });
  Array.sum = function (a) { var s = 0; for (var i = 0; i < a.length; i++) s += a[i]; return s; };
  Array.avg = function (a) { return a.length ? Array.sum(a) / a.length : undefined; };
  Array.contains = function (a, x) { return a.indexOf(x) >= 0; };
  Array.unique = function (a) { var r = []; for (var i = 0; i < a.length; i++) if (r.indexOf(a[i]) < 0) r.push(a[i]); return r; };
})(this);
`

// prelude is compiled once, when the first runtime is made (not at
// start-up: a server that runs no JavaScript never compiles it); every
// runtime runs it.
var prelude = sync.OnceValue(func() *goja.Program { return goja.MustCompile(preludeName, preludeSource, false) })

// preludeName names the prelude's source, whose frames errors leave out.
const preludeName = "prelude"
