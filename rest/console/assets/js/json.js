// JSON that stays exact. kvnode returns values byte for byte as stored:
// 10.0 stays 10.0 and 2^63-1 stays 9223372036854775807, which JSON.parse
// would turn into 10 and 9223372036854776000. This parser keeps every
// number's text, so what the console shows and writes back is what the
// cluster holds.
//
// A node is {t:'obj', entries:[[key, node], ...]}, {t:'arr', items:[...]},
// {t:'str', v}, {t:'num', raw}, {t:'bool', v} or {t:'null'}.

import { h } from './dom.js';

const WS = /[ \t\n\r]*/y;
const STR = /"(?:[^"\\\u0000-\u001f]|\\(?:["\\/bfnrt]|u[0-9a-fA-F]{4}))*"/y;
const NUM = /-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?/y;

export function parse(text) {
  let i = 0;
  const fail = (what) => { throw new SyntaxError(`${what} at position ${i + 1}`); };
  const ws = () => { WS.lastIndex = i; WS.exec(text); i = WS.lastIndex; };
  const str = () => {
    STR.lastIndex = i;
    const m = STR.exec(text);
    if (!m) fail('malformed string');
    i = STR.lastIndex;
    return JSON.parse(m[0]);
  };
  let depth = 0;
  const value = () => {
    ws();
    const c = text[i];
    if (c === '{' || c === '[') {
      if (++depth > 512) fail('nested too deeply');
      i++;
      const close = c === '{' ? '}' : ']';
      const node = c === '{' ? { t: 'obj', entries: [] } : { t: 'arr', items: [] };
      ws();
      if (text[i] === close) { i++; depth--; return node; }
      for (;;) {
        if (c === '{') {
          ws();
          if (text[i] !== '"') fail('expected a member name in quotes');
          const k = str();
          ws();
          if (text[i] !== ':') fail("expected ':'");
          i++;
          node.entries.push([k, value()]);
        } else {
          node.items.push(value());
        }
        ws();
        if (text[i] === ',') { i++; continue; }
        if (text[i] === close) { i++; depth--; return node; }
        fail(`expected ',' or '${close}'`);
      }
    }
    if (c === '"') return { t: 'str', v: str() };
    if (c === '-' || (c >= '0' && c <= '9')) {
      NUM.lastIndex = i;
      const m = NUM.exec(text);
      if (!m) fail('malformed number');
      i = NUM.lastIndex;
      return { t: 'num', raw: m[0] };
    }
    for (const [word, node] of [['true', { t: 'bool', v: true }], ['false', { t: 'bool', v: false }], ['null', { t: 'null' }]]) {
      if (text.startsWith(word, i)) { i += word.length; return node; }
    }
    fail(i >= text.length ? 'unexpected end of the text' : `unexpected '${c}'`);
  };
  const v = value();
  ws();
  if (i < text.length) fail('unexpected text after the value');
  return v;
}

// check parses text and answers the error message, or '' when it is JSON.
export function check(text) {
  try {
    parse(text);
    return '';
  } catch (e) {
    return e.message;
  }
}

function scalarText(n) {
  switch (n.t) {
    case 'str': return JSON.stringify(n.v);
    case 'num': return n.raw;
    case 'bool': return String(n.v);
    default: return 'null';
  }
}

// compact writes node without spaces, as the API does.
export function compact(n) {
  if (n.t === 'obj') return '{' + n.entries.map(([k, v]) => JSON.stringify(k) + ':' + compact(v)).join(',') + '}';
  if (n.t === 'arr') return '[' + n.items.map(compact).join(',') + ']';
  return scalarText(n);
}

// pretty writes node indented by two spaces.
export function pretty(n, ind = '') {
  const next = ind + '  ';
  if (n.t === 'obj') {
    if (!n.entries.length) return '{}';
    return '{\n' + n.entries.map(([k, v]) => next + JSON.stringify(k) + ': ' + pretty(v, next)).join(',\n') + '\n' + ind + '}';
  }
  if (n.t === 'arr') {
    if (!n.items.length) return '[]';
    return '[\n' + n.items.map((v) => next + pretty(v, next)).join(',\n') + '\n' + ind + ']';
  }
  return scalarText(n);
}

const classes = { str: 'j-str', num: 'j-num', bool: 'j-bool', null: 'j-null' };

// view renders node as an indented, highlighted <pre>. Very large values
// are shown as plain text, which the browser lays out much faster.
export function view(n) {
  const pre = h('pre.json');
  const text = pretty(n);
  if (text.length > 300000) {
    pre.textContent = text;
    return pre;
  }
  const out = [];
  const punct = (s) => out.push(h('span.j-punct', s));
  const walk = (node, ind) => {
    const next = ind + '  ';
    if (node.t === 'obj' || node.t === 'arr') {
      const obj = node.t === 'obj';
      const list = obj ? node.entries : node.items;
      punct(obj ? '{' : '[');
      if (!list.length) { punct(obj ? '}' : ']'); return; }
      list.forEach((item, idx) => {
        out.push('\n' + next);
        if (obj) {
          out.push(h('span.j-key', JSON.stringify(item[0])));
          punct(': ');
          walk(item[1], next);
        } else {
          walk(item, next);
        }
        if (idx < list.length - 1) punct(',');
      });
      out.push('\n' + ind);
      punct(obj ? '}' : ']');
      return;
    }
    out.push(h('span', { class: classes[node.t] }, scalarText(node)));
  };
  walk(n, '');
  pre.append(...out.map((x) => (typeof x === 'string' ? document.createTextNode(x) : x)));
  return pre;
}

// cell is a short text for a table cell: a string without its quotes,
// other scalars as written, objects and arrays compact.
export function cell(n) {
  if (!n) return '';
  if (n.t === 'str') return n.v;
  return n.t === 'obj' || n.t === 'arr' ? compact(n) : scalarText(n);
}

export function cellClass(n) {
  return n ? (classes[n.t] || '') : '';
}

// member finds an object's member by name.
export function member(n, name) {
  if (!n || n.t !== 'obj') return undefined;
  const e = n.entries.find(([k]) => k === name);
  return e ? e[1] : undefined;
}
