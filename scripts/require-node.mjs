// `node scripts/require-node.mjs MIN WHAT`: exit 1 with one clear line when this Node is older than
// MIN (major.minor[.patch]). Guards the one command whose dependencies need a newer Node than the rest
// of Cohort: `npm run dist` (electron-builder's @electron/rebuild and node-abi want Node >= 22.12;
// everything else runs on the package's `engines`, Node >= 20.19). COHORT_NODE_VERSION stands in for
// process.version (tests).
const [min, what = 'this command'] = process.argv.slice(2);
const parse = (v) => String(v).replace(/^v/, '').split('.').map((n) => Number(n) || 0);
const have = process.env.COHORT_NODE_VERSION || process.version;
const [a, b] = [parse(have), parse(min)];
for (let i = 0; i < 3; i++) {
  if ((a[i] ?? 0) > (b[i] ?? 0)) process.exit(0);
  if ((a[i] ?? 0) < (b[i] ?? 0)) {
    console.error(`${what} needs Node >= ${min} (this is Node ${have.replace(/^v/, '')}): install a newer Node (e.g. nvm install 22) and run it again. The CLI, \`cohort serve\`, the trainer and the tests need only Node >= 20.19.`);
    process.exit(1);
  }
}
