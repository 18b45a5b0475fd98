'use strict';
// Label selectors as entities write them (`backstage.io/kubernetes-label-selector`), parsed the
// way the API server parses them (k8s.io/apimachinery/pkg/labels): requirements joined by
// commas, each an existence test (`key`, `!key`), an equality test (`=`, `==`, `!=`), a set test
// (`in`, `notin`) or an integer comparison (`>`, `<`).
//
// The fetcher needs two answers from it: whether the selector is valid at all (an invalid one
// goes to the default fetcher, whose LIST gets the API server's own 400), and whether every
// object it selects carries a given label key (then the one informer per type that holds the
// objects with that key can answer it). Matching itself happens in the native cache.

/** A selector the API server would refuse with 400 BadRequest. */
class SelectorError extends Error {
  constructor(message) {
    super(message);
    this.name = 'SelectorError';
  }
}

const NAME = /^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$/;
const DNS_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
const INTEGER = /^-?\d+$/;

function checkKey(key) {
  const slash = key.indexOf('/');
  const prefix = slash >= 0 ? key.slice(0, slash) : '';
  const name = slash >= 0 ? key.slice(slash + 1) : key;
  const prefixOk = slash < 0 || (prefix.length > 0 && prefix.length <= 253 && DNS_SUBDOMAIN.test(prefix));
  if (!prefixOk || name.length === 0 || name.length > 63 || !NAME.test(name)) {
    throw new SelectorError(`invalid label key ${JSON.stringify(key)}`);
  }
}

function checkValue(value) {
  if (value !== '' && (value.length > 63 || !NAME.test(value))) {
    throw new SelectorError(`invalid label value ${JSON.stringify(value)}`);
  }
}

/** Splits on the same special characters as the upstream lexer. */
function tokenize(input) {
  const tokens = [];
  let i = 0;
  while (i < input.length) {
    const c = input[i];
    const two = input.slice(i, i + 2);
    if (/\s/.test(c)) {
      i++;
    } else if (two === '==' || two === '!=') {
      tokens.push(two);
      i += 2;
    } else if ('(),<>=!'.includes(c)) {
      tokens.push(c);
      i++;
    } else {
      let j = i;
      while (j < input.length && !/[\s(),<>=!]/.test(input[j])) j++;
      const word = input.slice(i, j);
      tokens.push(word === 'in' || word === 'notin' ? word : { id: word });
      i = j;
    }
  }
  return tokens;
}

const isId = (token) => typeof token === 'object' && token !== null;

/**
 * Parses a label selector into its requirements, `{ key, operator, values }` with `operator`
 * one of `exists`, `!`, `=`, `!=`, `in`, `notin`, `>`, `<` (`==` reads as `=`).
 * @param {string} selector
 * @returns {Array<{ key: string, operator: string, values: string[] }>}
 * @throws {SelectorError} for a selector the API server would refuse
 */
function parseSelector(selector) {
  if (typeof selector !== 'string') throw new SelectorError('a label selector must be a string');
  const tokens = tokenize(selector);
  const requirements = [];
  let i = 0;
  const next = () => tokens[i++];
  const expectValue = () => {
    const token = tokens[i];
    // An empty value (`key=`) is allowed: the token after the operator is then a comma or the end.
    if (token === undefined || token === ',') return '';
    if (!isId(token)) throw new SelectorError(`expected a value, found ${JSON.stringify(token)}`);
    i++;
    checkValue(token.id);
    return token.id;
  };
  while (i < tokens.length) {
    let token = next();
    let negated = false;
    if (token === '!') {
      negated = true;
      token = next();
    }
    if (!isId(token))
      throw new SelectorError(`expected a label key, found ${JSON.stringify(token ?? 'the end')}`);
    const key = token.id;
    checkKey(key);
    const op = tokens[i];
    if (negated || op === undefined || op === ',') {
      requirements.push({ key, operator: negated ? '!' : 'exists', values: [] });
    } else if (op === '=' || op === '==' || op === '!=') {
      i++;
      requirements.push({ key, operator: op === '!=' ? '!=' : '=', values: [expectValue()] });
    } else if (op === '>' || op === '<') {
      i++;
      const value = expectValue();
      if (!INTEGER.test(value))
        throw new SelectorError(`${op} needs an integer, not ${JSON.stringify(value)}`);
      requirements.push({ key, operator: op, values: [value] });
    } else if (op === 'in' || op === 'notin') {
      i++;
      if (next() !== '(') throw new SelectorError(`expected "(" after ${op}`);
      const values = [];
      for (;;) {
        values.push(expectValue());
        const after = next();
        if (after === ')') break;
        if (after !== ',') throw new SelectorError(`expected "," or ")" in the values of ${key}`);
      }
      requirements.push({ key, operator: op, values });
    } else {
      throw new SelectorError(`unexpected ${JSON.stringify(op)} after the key ${key}`);
    }
    if (i < tokens.length) {
      if (tokens[i] !== ',') throw new SelectorError(`expected "," after the requirement on ${key}`);
      i++;
      if (i === tokens.length) throw new SelectorError('the selector ends with a comma');
    }
  }
  return requirements;
}

/** Operators an object can satisfy only if it carries the key. */
const NEEDS_KEY = new Set(['exists', '=', 'in', '>', '<']);

/** Whether every object `requirements` select carries the label `key`. */
function requiresKey(requirements, key) {
  return requirements.some((r) => r.key === key && NEEDS_KEY.has(r.operator));
}

/**
 * Whether an object without any label can match: every requirement is negative (`!=`, `notin`,
 * `!key`), or there are none. Such a selector selects the whole type, unlabelled objects
 * included, so it is never cached.
 */
function matchesUnlabelled(requirements) {
  return requirements.every((r) => !NEEDS_KEY.has(r.operator));
}

module.exports = { parseSelector, requiresKey, matchesUnlabelled, SelectorError };
