'use strict';
// A suite's command-line options, each `--name` or `--name=value`, all known to it: anything else
// ends the run before it starts, pointing at the header of the suite's file, where they are listed.

const fs = require('node:fs');

/**
 * The options of `argv`; exits 2 on one `pattern` (the alternatives after `--`) does not match.
 * `opt(name)` is an option's value (undefined when absent), `num(name, dflt)` the same as a
 * number, `flag(name)` whether `--name` is given; `saveJson(data)` writes `data` to the file of
 * `--json=<file>`, if given.
 */
function options(argv, pattern, file) {
  for (const a of argv) {
    if (!new RegExp(`^--(${pattern.source})$`).test(a)) {
      console.error(`unknown option ${a}; see the header of bench/${file}`);
      process.exit(2);
    }
  }
  const opt = (name) => argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3);
  const num = (name, dflt) => (opt(name) === undefined ? dflt : Number(opt(name)));
  const flag = (name) => argv.includes(`--${name}`);
  const saveJson = (data) => opt('json') && fs.writeFileSync(opt('json'), JSON.stringify(data, null, 1));
  return { opt, num, flag, saveJson };
}

module.exports = { options };
