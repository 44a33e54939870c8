/**
 * The JavaScript that runs inside each fresh isolate before the user's script: it installs `console` and
 * `sdk` and returns the entry runner to the host. It is a string, not compiled TypeScript, because it runs
 * in V8 without Node and must stay exactly as written (no transpiler helpers).
 *
 * Security rules this code keeps:
 * - The host References (`$0` log, `$1` bridge, `$2` reply) live only in this closure; user code never
 *   gets a handle to them, since a Reference could be used to reach host objects.
 * - Everything it calls later, after user code may have polluted prototypes or globals, is captured up
 *   front, and the options objects given to isolated-vm have null prototypes so `Object.prototype.result`
 *   or `.reference` cannot change how values cross.
 * - Only strings cross the boundary; the replies are built by concatenation, never `JSON.stringify` of an
 *   envelope object, so a polluted `toJSON` cannot forge them.
 */

/** The file name user code is compiled under; it shows in error locations instead of any host path. */
export const SCRIPT_FILENAME = 'worker.js';
export const BOOTSTRAP_FILENAME = 'sandbox-bootstrap.js';

/** Prefixes of the runner's reply (`<kind>:<payload>`) and of the bridge's reply to the isolate. */
export const REPLY_OK = 'ok';
export const REPLY_SCRIPT_ERROR = 'script';
export const REPLY_INVALID_OUTPUT = 'invalid_output';
export const BRIDGE_OK = 'ok:';
export const BRIDGE_ERROR = 'error:';

/** The settings `$3` carries into the bootstrap, as JSON. */
export interface BootstrapSettings {
  sdkNames: string[];
  maxLogBytes: number;
  maxOutputBytes: number;
}

/**
 * Body of a closure run with `context.evalClosure(source, [logRef, bridgeRef, replyRef, settingsJson])`.
 * It returns `startEntry(entryName, argsJson)`, which calls `replyRef` once with `<kind>:<payload>`.
 */
export const BOOTSTRAP_SOURCE = String.raw`
'use strict';
const logRef = $0;
const bridgeRef = $1;
const replyRef = $2;
const uncurry = (fn) => Function.prototype.call.bind(fn);
const applyLog = uncurry(logRef.applySync);
const applyBridge = uncurry(bridgeRef.apply);
const applyReply = uncurry(replyRef.applySync);
const parse = JSON.parse;
const stringify = JSON.stringify;
const globalEval = globalThis.eval;
const StringCtor = String;
const ErrorCtor = Error;
const RangeErrorCtor = RangeError;
const freeze = Object.freeze;
const defineProperty = Object.defineProperty;
const createObject = Object.create;
const sliceString = uncurry(String.prototype.slice);
const execRegExp = uncurry(RegExp.prototype.exec);
const isPrototypeOf = uncurry(Object.prototype.isPrototypeOf);
const errorPrototype = Error.prototype;
const LOCATION = /${SCRIPT_FILENAME.replace('.', '\\.')}:\d+:\d+/;
const bridgeOptions = freeze({ __proto__: null, result: freeze({ __proto__: null, promise: true, copy: true }) });
const settings = parse($3);
const maxLogBytes = settings.maxLogBytes;
const maxOutputBytes = settings.maxOutputBytes;

function isError(value) {
  try {
    return value !== null && typeof value === 'object' && isPrototypeOf(errorPrototype, value);
  } catch {
    return false;
  }
}

function safeString(value) {
  try {
    const text = StringCtor(value);
    return typeof text === 'string' ? text : '[unprintable value]';
  } catch {
    return '[unprintable value]';
  }
}

function readProperty(object, key) {
  try {
    return object[key];
  } catch {
    return undefined;
  }
}

function errorMessage(error) {
  const message = readProperty(error, 'message');
  if (typeof message === 'string' && message !== '') return message;
  const name = readProperty(error, 'name');
  return typeof name === 'string' && name !== '' ? name : 'Error';
}

function formatItem(value) {
  const type = typeof value;
  if (type === 'string') return value;
  if (type === 'function') return '[Function]';
  if (value === null || type !== 'object') return safeString(value);
  if (isError(value)) return safeString(readProperty(value, 'name')) + ': ' + errorMessage(value);
  try {
    const json = stringify(value);
    if (typeof json === 'string') return json;
  } catch {}
  return safeString(value);
}

// What a thrown value becomes in the outcome: its message plus where in the script it was raised.
function describeThrown(thrown) {
  if (!isError(thrown)) return formatItem(thrown);
  let location = '';
  const stack = readProperty(thrown, 'stack');
  if (typeof stack === 'string') {
    try {
      const match = execRegExp(LOCATION, stack);
      if (match !== null) location = ' (' + match[0] + ')';
    } catch {}
  }
  return errorMessage(thrown) + location;
}

let logOpen = true;
function emit(level, items) {
  if (!logOpen) return;
  let text = '';
  for (let i = 0; i < items.length && text.length <= maxLogBytes; i++) {
    if (i > 0) text += ' ';
    text += formatItem(items[i]);
  }
  // Never ship more than the whole log budget in one call; the host cuts to the exact byte count.
  if (text.length > maxLogBytes + 1) text = sliceString(text, 0, maxLogBytes + 1);
  logOpen = applyLog(logRef, undefined, [level, text]) === true;
}

const consoleObject = {
  log(...items) { emit('info', items); },
  info(...items) { emit('info', items); },
  debug(...items) { emit('debug', items); },
  warn(...items) { emit('warn', items); },
  error(...items) { emit('error', items); },
};

function decodeBridgeReply(name, reply) {
  if (typeof reply === 'string' && sliceString(reply, 0, ${BRIDGE_OK.length}) === '${BRIDGE_OK}') {
    return parse(sliceString(reply, ${BRIDGE_OK.length}));
  }
  throw new ErrorCtor(typeof reply === 'string' ? sliceString(reply, ${BRIDGE_ERROR.length}) : 'sdk.' + name + ' failed');
}

// isolated-vm settles the promise apply() returns through Promise.prototype.then, so a script that
// replaces then() breaks its own sdk calls; it gets nothing more than isolate-side resolver functions.
async function callHost(name, args) {
  const payload = stringify(args);
  if (typeof payload !== 'string') throw new ErrorCtor('Arguments to sdk.' + name + ' are not JSON-serialisable');
  if (payload.length > maxOutputBytes) {
    throw new RangeErrorCtor('Arguments to sdk.' + name + ' exceed the limit of ' + maxOutputBytes + ' bytes');
  }
  return decodeBridgeReply(name, await applyBridge(bridgeRef, undefined, [name, payload], bridgeOptions));
}

const sdk = createObject(null);
const sdkNames = settings.sdkNames;
for (let i = 0; i < sdkNames.length; i++) {
  const name = sdkNames[i];
  defineProperty(sdk, name, { value: (...args) => callHost(name, args), enumerable: true });
}
freeze(sdk);

defineProperty(globalThis, 'console', { value: consoleObject, writable: true, configurable: true });
defineProperty(globalThis, 'sdk', { value: sdk, writable: true, configurable: true });

function encodeResult(result) {
  const type = typeof result;
  if (type === 'function' || type === 'symbol') {
    return '${REPLY_INVALID_OUTPUT}:The result is a ' + type + ', which is not JSON-serialisable';
  }
  let json;
  try {
    json = stringify(result);
  } catch (error) {
    return '${REPLY_INVALID_OUTPUT}:The result is not JSON-serialisable: ' + describeThrown(error);
  }
  if (json === undefined) json = 'null';
  // A JSON string has at least as many UTF-8 bytes as UTF-16 units, so this never rejects a result
  // that fits; the host checks the exact byte count.
  if (json.length > maxOutputBytes) {
    return '${REPLY_INVALID_OUTPUT}:The result JSON exceeds the limit of ' + maxOutputBytes + ' bytes';
  }
  return '${REPLY_OK}:' + json;
}

// The host validated entryName as an identifier, so the indirect eval only reads a global binding
// (function declarations and top-level let/const alike).
async function computeReply(entryName, argsJson) {
  let entryType = 'undefined';
  let entry;
  try {
    entryType = globalEval('typeof ' + entryName);
    if (entryType === 'function') entry = globalEval(entryName);
  } catch {}
  if (typeof entry !== 'function') {
    const problem = entryType === 'undefined' ? ' is not defined' : ' is a ' + entryType + ', not a function';
    return '${REPLY_SCRIPT_ERROR}:Entry point ' + entryName + problem + ': the script must define function ' + entryName + '(args)';
  }
  let result;
  try {
    result = await entry(parse(argsJson));
  } catch (error) {
    return '${REPLY_SCRIPT_ERROR}:' + describeThrown(error);
  }
  return encodeResult(result);
}

async function runEntry(entryName, argsJson) {
  applyReply(replyRef, undefined, [await computeReply(entryName, argsJson)]);
}

// The reply goes back through a host callback rather than as a returned promise: isolated-vm would
// settle a returned promise by calling its (user-replaceable) Promise.prototype.then.
return function startEntry(entryName, argsJson) {
  runEntry(entryName, argsJson);
};
`;
