// Build DeepSeek Harness's vendored Cordis HMR plugin (vendor/hmr) from the harness's
// repository at a named commit into an npm install of a dsh release.
//
// Why: the dsh launcher calls `hmr.registerConfig` (@deepseek-ai/dsh-app-boot,
// watchUserPatches), which only the repository's vendor/hmr has; no release of
// @deepseek-ai/cordis-plugin-hmr on npm (1.0.16, 1.0.17, 1.0.19) does, so an npm install
// stops at "hmr.registerConfig is not a function". A source build of dsh links vendor/hmr
// (pnpm-workspace.yaml: linkWorkspacePackages); this does the same for that one package.
//
// usage: node deepseek_harness_hmr.mjs PREFIX COMMIT
// The repository: $FIDELITY_DSH_SOURCE (a clone or a bare git dir), else a clone of
// https://github.com/deepseek-ai/deepseek-harness. Needs node >= 22.13 (stripTypeScriptTypes).
import { execFileSync } from 'node:child_process'
import { mkdtempSync, writeFileSync, existsSync } from 'node:fs'
import { stripTypeScriptTypes } from 'node:module'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

const [prefix, commit] = process.argv.slice(2)
if (!prefix || !commit) {
  console.error('usage: deepseek_harness_hmr.mjs PREFIX COMMIT')
  process.exit(2)
}
let source = process.env.FIDELITY_DSH_SOURCE
if (!source) {
  source = join(mkdtempSync(join(tmpdir(), 'dsh-source-')), 'repo')
  execFileSync('git', ['clone', '--quiet', '--bare', '--filter=blob:none',
    'https://github.com/deepseek-ai/deepseek-harness', source], { stdio: 'inherit' })
}
const gitDir = existsSync(join(source, '.git')) ? join(source, '.git') : source
const show = (path) => execFileSync('git', ['--git-dir', gitDir, 'show', `${commit}:${path}`], { encoding: 'utf8' })
const lib = join(prefix, 'node_modules', '@deepseek-ai', 'cordis-plugin-hmr', 'lib')
if (!existsSync(lib)) {
  console.error(`${lib}: not found (is @deepseek-ai/dsh installed there?)`)
  process.exit(2)
}
for (const name of ['index', 'error']) {
  const js = stripTypeScriptTypes(show(`vendor/hmr/src/${name}.ts`), { mode: 'transform' })
    .replaceAll(`from './error.ts'`, `from './error.js'`)
  writeFileSync(join(lib, `${name}.js`), js)
}
writeFileSync(join(lib, 'SOURCE'), `vendor/hmr of github.com/deepseek-ai/deepseek-harness at ${commit}\n`)
console.log(`built vendor/hmr at ${commit} into ${lib}`)
