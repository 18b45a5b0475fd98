'use strict';
// The values of a kubeconfig as kubectl reads them (YAML's failsafe schema: every scalar a
// string, booleans and nulls spelled as YAML 1.1 spells them), the files it names, and the error
// every part of ./kubeconfig.js throws. No value of a token, key or certificate is ever quoted.

const fs = require('node:fs');
const path = require('node:path');

/** A kubeconfig that cannot be used; the message is safe to print (no secrets in it). */
class KubeconfigError extends Error {
  /**
   * @param {string} message
   * @param {'NoKubeconfig' | 'ContextNotFound'} [reason] set for the failures a first run
   *   usually meets, so the CLI can add a hint
   */
  constructor(message, reason) {
    super(message);
    this.name = 'KubeconfigError';
    this.code = 'ERR_KUBECONFIG';
    if (reason) this.reason = reason;
  }
}

function isFile(p) {
  try {
    return fs.statSync(p).isFile();
  } catch {
    return false;
  }
}

function readText(file, what) {
  try {
    return fs.readFileSync(file, 'utf8');
  } catch (err) {
    throw new KubeconfigError(`${what} ${file} cannot be read (${err.code || err.message})`);
  }
}

function isMapping(v) {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}

/** With the failsafe schema a YAML null is the plain text `~`/`null` or an empty value. */
function isNull(v) {
  return v === null || v === '~' || v === 'null' || v === 'Null' || v === 'NULL';
}

/** A scalar field as a string, '' when absent or null. */
function scalar(v) {
  if (v === undefined || isNull(v) || typeof v !== 'string') return '';
  return v;
}

const TRUE_WORDS = new Set(['true', 'True', 'TRUE', 'yes', 'Yes', 'YES', 'on', 'On', 'ON', 'y', 'Y']);

const FALSE_WORDS = new Set(['false', 'False', 'FALSE', 'no', 'No', 'NO', 'off', 'Off', 'OFF', 'n', 'N']);

/** Booleans as kubectl's YAML 1.1 reader accepts them. */
function bool(v, what) {
  const s = scalar(v);
  if (!s) return false;
  if (TRUE_WORDS.has(s)) return true;
  if (FALSE_WORDS.has(s)) return false;
  throw new KubeconfigError(`${what} must be true or false`);
}

function decodeBase64(s) {
  return Buffer.from(s, 'base64').toString('utf8');
}

/** A plain-HTTP server on the loopback interface: what `kubectl proxy` serves. */
function isLocalPlainHttp(url) {
  const u = new URL(url);
  if (u.protocol !== 'http:') return false;
  const host = u.hostname;
  return host === 'localhost' || host === '[::1]' || /^127(\.\d{1,3}){3}$/.test(host);
}

/** Reads `<field>-data` (base64 of PEM; wins) or `<field>` (a file) as a PEM string. */
function pemFrom(body, field, dir, what) {
  const data = scalar(body[`${field}-data`]);
  if (data) {
    const pem = decodeBase64(data);
    if (!pem.includes('-----BEGIN'))
      throw new KubeconfigError(`${what}: ${field}-data is not base64 of a PEM block`);
    return pem;
  }
  const file = scalar(body[field]);
  if (!file) return '';
  const resolved = path.resolve(dir, file);
  const pem = readText(resolved, `${what}: ${field}`);
  if (!pem.includes('-----BEGIN')) throw new KubeconfigError(`${what}: ${field} file ${resolved} is not PEM`);
  return pem;
}

module.exports = {
  KubeconfigError,
  isFile,
  readText,
  isMapping,
  isNull,
  scalar,
  bool,
  decodeBase64,
  isLocalPlainHttp,
  pemFrom,
};
