'use strict';

// Label selectors as the API server parses them (k8s.io/apimachinery/pkg/labels):
// requirements joined by commas, each an existence test, an equality test or a set test.

/** Thrown for a selector the real server would answer with 400 BadRequest. */
class SelectorError extends Error {
  constructor(message) {
    super(message);
    this.name = 'SelectorError';
    this.code = 400;
  }
}

const NAME_RE = /^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$/;
const DNS_SUBDOMAIN_RE = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

function validateKey(key) {
  const slash = key.indexOf('/');
  const prefix = slash >= 0 ? key.slice(0, slash) : '';
  const name = slash >= 0 ? key.slice(slash + 1) : key;
  const bad =
    (slash >= 0 && (!prefix || prefix.length > 253 || !DNS_SUBDOMAIN_RE.test(prefix))) ||
    !name ||
    name.length > 63 ||
    !NAME_RE.test(name);
  if (bad) {
    throw new SelectorError(
      `unable to parse requirement: key: Invalid value: "${key}": name part must consist of ` +
        "alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character",
    );
  }
}

function validateValue(key, value) {
  if (value === '') return;
  if (value.length > 63 || !NAME_RE.test(value)) {
    throw new SelectorError(
      `unable to parse requirement: values[0][${key}]: Invalid value: "${value}": a valid label ` +
        "must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and " +
        'must start and end with an alphanumeric character',
    );
  }
}

// The lexer splits on the same special characters as the upstream one, so `a=b` and
// `a = b` read alike and `in`/`notin` are keywords only as whole identifiers.
function tokenize(input) {
  const tokens = [];
  let i = 0;
  while (i < input.length) {
    const c = input[i];
    if (/\s/.test(c)) {
      i++;
    } else if (input.startsWith('==', i) || input.startsWith('!=', i)) {
      tokens.push({ t: input.slice(i, i + 2) });
      i += 2;
    } else if ('(),<>=!'.includes(c)) {
      tokens.push({ t: c });
      i++;
    } else {
      let j = i;
      while (j < input.length && !/[\s(),<>=!]/.test(input[j])) j++;
      const word = input.slice(i, j);
      tokens.push(word === 'in' || word === 'notin' ? { t: word } : { t: 'id', v: word });
      i = j;
    }
  }
  return tokens;
}

/**
 * Parses a label selector string.
 * @param {string|undefined|null} input e.g. `app=web,tier in (fe,be),!canary`
 * @returns {Array<{key: string, op: string, values: string[]}>} requirements (empty = everything)
 * @throws {SelectorError} on a selector the API server would reject with 400
 */
function parseSelector(input) {
  if (input == null || input.trim() === '') return [];
  const tokens = tokenize(input);
  let pos = 0;
  const peek = () => tokens[pos] || { t: 'eos' };
  const next = () => tokens[pos++] || { t: 'eos' };
  const fail = (what) => {
    const tok = peek();
    const found = tok.t === 'eos' ? 'end of string' : (tok.v ?? tok.t);
    throw new SelectorError(`unable to parse requirement: found '${found}', expected: ${what}`);
  };
  const reqs = [];
  for (;;) {
    let negated = false;
    if (peek().t === '!') {
      negated = true;
      next();
    }
    if (peek().t !== 'id') fail('identifier');
    const key = next().v;
    validateKey(key);
    const after = peek().t;
    if (after === 'eos' || after === ',') {
      reqs.push({ key, op: negated ? '!' : 'exists', values: [] });
    } else if (negated) {
      fail("',' or 'end of string'");
    } else {
      const op = next().t;
      if (op === 'in' || op === 'notin') {
        if (peek().t !== '(') fail("'('");
        next();
        const values = [];
        for (;;) {
          // An empty member (`in ()`, `in (a,)`) is an empty-string value, as upstream.
          const tok = peek();
          if (tok.t === 'id') {
            values.push(next().v);
          } else if (tok.t === ',' || tok.t === ')') {
            values.push('');
          } else {
            fail("',', ')' or identifier");
          }
          if (peek().t !== ')' && peek().t !== ',') fail("',' or ')'");
          if (next().t === ')') break;
        }
        values.forEach((v) => validateValue(key, v));
        reqs.push({ key, op, values });
      } else if (op === '=' || op === '==' || op === '!=') {
        const tok = peek();
        let value = '';
        if (tok.t === 'id') value = next().v;
        else if (tok.t !== ',' && tok.t !== 'eos') fail('identifier');
        validateValue(key, value);
        reqs.push({ key, op: op === '!=' ? '!=' : '=', values: [value] });
      } else if (op === '<' || op === '>') {
        const tok = next();
        if (tok.t !== 'id' || !/^-?\d+$/.test(tok.v)) {
          throw new SelectorError(
            `unable to parse requirement: for 'Gt', 'Lt' operators, the value must be an integer`,
          );
        }
        reqs.push({ key, op, values: [tok.v] });
      } else {
        pos--;
        fail("'=', '!=', '==', 'in', 'notin', '<' or '>'");
      }
    }
    const sep = next().t;
    if (sep === 'eos') break;
    if (sep !== ',') {
      pos--;
      fail("',' or 'end of string'");
    }
  }
  return reqs;
}

/**
 * Tests labels against parsed requirements (all must hold).
 * @param {Array<{key: string, op: string, values: string[]}>} reqs from parseSelector
 * @param {Record<string,string>|undefined} labels an object's metadata.labels
 * @returns {boolean}
 */
function matchesSelector(reqs, labels) {
  const l = labels || {};
  for (const { key, op, values } of reqs) {
    const has = Object.prototype.hasOwnProperty.call(l, key);
    const v = has ? String(l[key]) : undefined;
    switch (op) {
      case 'exists':
        if (!has) return false;
        break;
      case '!':
        if (has) return false;
        break;
      case '=':
      case 'in':
        if (!has || !values.includes(v)) return false;
        break;
      // Upstream treats a missing label as satisfying != and notin.
      case '!=':
      case 'notin':
        if (has && values.includes(v)) return false;
        break;
      case '<':
      case '>': {
        if (!has || !/^-?\d+$/.test(v)) return false;
        const n = Number(v);
        const bound = Number(values[0]);
        if (op === '<' ? !(n < bound) : !(n > bound)) return false;
        break;
      }
      default:
        return false;
    }
  }
  return true;
}

/**
 * Parses once and returns a predicate over labels.
 * @param {string|undefined|null} input a label selector string
 * @returns {(labels: Record<string,string>|undefined) => boolean}
 * @throws {SelectorError}
 */
function compileSelector(input) {
  const reqs = parseSelector(input);
  if (reqs.length === 0) return () => true;
  return (labels) => matchesSelector(reqs, labels);
}

module.exports = { parseSelector, matchesSelector, compileSelector, SelectorError };
