// Typed values for queries and functions, and bind values written into an
// ad-hoc query's text. The API's ad-hoc endpoint takes no bind values, so,
// as the kvnode client does (cli/binds.go), $1, $2, ... become OQL
// literals of their values' types; a named query binds on the server.

export const scalarTypes = ['string', 'int', 'long', 'double', 'float', 'boolean', 'short', 'byte'];

const intBits = { byte: 8n, short: 16n, int: 32n, long: 64n };

// checkScalar answers why text is not a value of type, or ''.
export function checkScalar(type, text) {
  switch (type) {
    case 'byte': case 'short': case 'int': case 'long': {
      if (!/^[+-]?[0-9]+$/.test(text.trim())) return `"${text}" is not an integer`;
      const n = BigInt(text.trim());
      const lim = 1n << (intBits[type] - 1n);
      if (n < -lim || n >= lim) return `${text} is out of the range of ${type}`;
      return '';
    }
    case 'float': case 'double': {
      const t = text.trim();
      if (!/^[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?$/.test(t) || !Number.isFinite(Number(t))) return `"${text}" is not a number`;
      if (type === 'float' && !Number.isFinite(Math.fround(Number(t)))) return `${text} is out of the range of float`;
      return '';
    }
    case 'boolean':
      return /^(true|false)$/i.test(text.trim()) ? '' : `"${text}" is not true or false`;
    default:
      return '';
  }
}

// typed is the API's form of a scalar: {"@type", "@value"}, the value as
// text, which the API reads by the type.
export function typed(type, text) {
  return { '@type': type, '@value': type === 'string' ? text : text.trim() };
}

// literal writes a checked value as an OQL literal the server reads back
// as the value it would bind.
export function literal(type, text) {
  const t = text.trim();
  let lit;
  switch (type) {
    case 'byte': case 'short': case 'int': case 'long': {
      const n = BigInt(t);
      if (n === -(1n << 63n)) return '(-9223372036854775807L - 1)';
      lit = n.toString() + (n > 2147483647n || n < -2147483648n ? 'L' : '');
      break;
    }
    case 'float':
      lit = String(Number(t)) + 'f';
      break;
    case 'double':
      lit = String(Number(t));
      if (!/[.e]/.test(lit)) lit += 'd';
      break;
    case 'boolean':
      return t.toLowerCase();
    default:
      return "'" + text.replaceAll("'", "''") + "'";
  }
  return lit.startsWith('-') ? `(${lit})` : lit;
}

// params is the highest $n of text outside strings, quoted names and
// comments (0 when there is none).
export function params(text) {
  let highest = 0;
  scan(text, (n) => { highest = Math.max(highest, n); return `$${n}`; });
  return highest;
}

// substitute writes binds ([{type, value}]) into text. It throws when the
// values are not exactly as many as the highest parameter.
export function substitute(text, binds) {
  let highest = 0;
  const out = scan(text, (n) => {
    if (n > binds.length) throw new Error(`the query uses $${n} but ${binds.length} bind value(s) were given`);
    highest = Math.max(highest, n);
    return literal(binds[n - 1].type, binds[n - 1].value);
  });
  if (highest !== binds.length) throw new Error(`${binds.length} bind value(s) were given for a query whose parameters go up to $${highest}`);
  return out;
}

function scan(text, param) {
  let out = '';
  let i = 0;
  while (i < text.length) {
    const c = text[i];
    let skip = 1;
    if (c === "'" || c === '"') {
      let j = i + 1;
      for (; j < text.length; j++) {
        if (text[j] !== c) continue;
        if (c === "'" && text[j + 1] === "'") { j++; continue; }
        break;
      }
      skip = Math.min(j + 1, text.length) - i;
    } else if (text.startsWith('--', i)) {
      const e = text.indexOf('\n', i);
      skip = (e < 0 ? text.length : e) - i;
    } else if (text.startsWith('/*', i)) {
      const e = text.indexOf('*/', i + 2);
      skip = (e < 0 ? text.length : e + 2) - i;
    } else if (c === '$') {
      let j = i + 1;
      while (j < text.length && text[j] >= '0' && text[j] <= '9') j++;
      const n = Number(text.slice(i + 1, j));
      if (j > i + 1 && n >= 1) {
        out += param(n);
        i = j;
        continue;
      }
    }
    out += text.slice(i, i + skip);
    i += skip;
  }
  return out;
}
