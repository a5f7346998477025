// E2B's own JS SDK, unmodified, against `corral serve`: the ground the
// Python suite (../python/test_sdk.py) covers.
//
// Set CORRAL_BIN to the corral binary and CORRAL_BACKEND (default: memory).

import { after, before, test } from 'node:test'
import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createInterface } from 'node:readline'

import {
  AuthenticationError,
  CommandExitError,
  FilesystemEventType,
  NotFoundError,
  Sandbox,
  TimeoutError,
} from 'e2b'

let server
let work

before(async () => {
  const binary = process.env.CORRAL_BIN ?? 'target/debug/corral'
  const backend = process.env.CORRAL_BACKEND ?? 'memory'
  const key = 'e2b_' + randomBytes(20).toString('hex')
  work = mkdtempSync(join(tmpdir(), 'corral-e2b-node-'))
  writeFileSync(join(work, 'key'), key, { mode: 0o600 })
  server = spawn(
    binary,
    ['serve', '--backend', backend, '--listen', '127.0.0.1:0', '--token-file', join(work, 'key')],
    { stdio: ['ignore', 'pipe', 'inherit'] },
  )
  const lines = createInterface({ input: server.stdout })
  const first = await new Promise((resolve, reject) => {
    lines.once('line', resolve)
    server.once('exit', (code) => reject(new Error(`corral serve exited ${code}`)))
  })
  const url = first.match(/http:\/\/\S+/)?.[0]
  assert.ok(url, `corral serve printed ${JSON.stringify(first)}`)
  process.env.E2B_API_URL = url
  process.env.E2B_SANDBOX_URL = url
  process.env.E2B_API_KEY = key
})

after(async () => {
  if (server && server.exitCode === null) {
    const exited = new Promise((resolve) => server.once('exit', resolve))
    server.kill('SIGTERM')
    await exited
  }
  if (work) rmSync(work, { recursive: true, force: true })
})

async function withSandbox(fn) {
  const sbx = await Sandbox.create()
  try {
    await fn(sbx)
  } finally {
    await sbx.kill()
  }
}

async function listed(metadata) {
  const paginator = Sandbox.list({ query: { metadata } })
  return (await paginator.nextItems()).map((s) => s.sandboxId).sort()
}

const pids = async (sbx) => (await sbx.commands.list()).map((p) => p.pid)

// A refusal answered before its body is read leaves the pooled connection
// fit for the calls after it (or closes it saying so).
test('a wrong API key is refused', async () => {
  const apiKey = 'e2b_' + '0'.repeat(40)
  await assert.rejects(Sandbox.list({ apiKey }).nextItems(), AuthenticationError)
  await assert.rejects(Sandbox.create({ apiKey }), AuthenticationError)
  const sandbox = await Sandbox.create()
  try {
    assert.equal((await sandbox.commands.run('echo after')).stdout, 'after\n')
  } finally {
    await sandbox.kill()
  }
})

test('create, get info, list by metadata, set the timeout, kill', async () => {
  const run = randomBytes(4).toString('hex')
  const sbx = await Sandbox.create({ metadata: { suite: 'sdk', run }, timeoutMs: 120_000 })
  try {
    const info = await sbx.getInfo()
    assert.equal(info.sandboxId, sbx.sandboxId)
    assert.deepEqual(info.metadata, { suite: 'sdk', run })
    assert.equal(info.templateId, 'base')
    assert.ok(info.endAt > info.startedAt)

    assert.deepEqual(await listed({ run }), [sbx.sandboxId])
    assert.deepEqual(await listed({ run: 'no-' + run }), [])

    await sbx.setTimeout(300_000)
    assert.ok((await sbx.getInfo()).endAt > info.endAt)
    assert.equal(await sbx.isRunning(), true)
  } finally {
    assert.equal(await sbx.kill(), true)
  }
  assert.equal(await Sandbox.kill(sbx.sandboxId), false)
  assert.deepEqual(await listed({ run }), [])
  await assert.rejects(Sandbox.getInfo(sbx.sandboxId), NotFoundError)
})

test('a template names an image of the backend; an unknown one is refused', async () => {
  await assert.rejects(Sandbox.create('no-such-template-here'), (e) => {
    assert.match(e.message, /template "no-such-template-here" not found/)
    return true
  })
  if ((process.env.CORRAL_BACKEND ?? 'memory') !== 'linux') return
  const sbx = await Sandbox.create('host')
  try {
    assert.equal((await sbx.getInfo()).templateId, 'host')
    assert.equal((await sbx.commands.run('echo from host')).stdout, 'from host\n')
  } finally {
    await sbx.kill()
  }
})

test('connect by id', async () => {
  await withSandbox(async (sbx) => {
    const again = await Sandbox.connect(sbx.sandboxId)
    assert.equal(again.sandboxId, sbx.sandboxId)
    assert.equal((await again.commands.run('echo connected')).stdout, 'connected\n')
    await again.files.write('/tmp/from-connected.txt', 'seen')
    assert.equal(await sbx.files.read('/tmp/from-connected.txt'), 'seen')
  })
})

test('a foreground run streams to its callbacks', async () => {
  await withSandbox(async (sbx) => {
    const out = []
    const err = []
    const result = await sbx.commands.run('echo "out $GREETING"; echo err >&2; pwd', {
      envs: { GREETING: 'hello' },
      cwd: '/tmp',
      onStdout: (d) => out.push(d),
      onStderr: (d) => err.push(d),
    })
    assert.equal(result.exitCode, 0)
    assert.equal(result.stdout, 'out hello\n/tmp\n')
    assert.equal(result.stderr, 'err\n')
    assert.equal(out.join(''), result.stdout)
    assert.equal(err.join(''), result.stderr)
  })
})

test('a nonzero exit rejects with CommandExitError', async () => {
  await withSandbox(async (sbx) => {
    await assert.rejects(sbx.commands.run('echo failing >&2; exit 3'), (e) => {
      assert.ok(e instanceof CommandExitError)
      assert.equal(e.exitCode, 3)
      assert.equal(e.stderr, 'failing\n')
      return true
    })
  })
})

test('a background run is listed and killed', async () => {
  await withSandbox(async (sbx) => {
    const handle = await sbx.commands.run('sleep 60', { background: true })
    assert.ok((await pids(sbx)).includes(handle.pid))
    assert.equal(await sbx.commands.kill(handle.pid), true)
    await assert.rejects(handle.wait(), CommandExitError)
    for (let i = 0; i < 50 && (await pids(sbx)).includes(handle.pid); i++) {
      await new Promise((r) => setTimeout(r, 100))
    }
    assert.ok(!(await pids(sbx)).includes(handle.pid))
    assert.equal(await sbx.commands.kill(handle.pid), false)
  })
})

test('connect to a running command', async () => {
  await withSandbox(async (sbx) => {
    const handle = await sbx.commands.run('sleep 1; echo late; exit 3', { background: true })
    const attached = await sbx.commands.connect(handle.pid)
    const ended = await attached.wait().catch((e) => e)
    assert.ok(ended instanceof CommandExitError, String(ended))
    assert.deepEqual([ended.exitCode, ended.stdout], [3, 'late\n'])
    const started = await handle.wait().catch((e) => e)
    assert.deepEqual([started.exitCode, started.stdout], [3, 'late\n'])
    await assert.rejects(
      sbx.commands.connect(4000000).then((h) => h.wait()),
      NotFoundError,
    )
  })
})

test('a background run is waited for', async () => {
  await withSandbox(async (sbx) => {
    const handle = await sbx.commands.run('sleep 0.2; echo done', { background: true })
    const result = await handle.wait()
    assert.equal(result.exitCode, 0)
    assert.equal(result.stdout, 'done\n')
  })
})

test('stdin: send, then close', async () => {
  await withSandbox(async (sbx) => {
    const one = await sbx.commands.run('head -n 1', { background: true, stdin: true })
    await sbx.commands.sendStdin(one.pid, 'through stdin\n')
    assert.equal((await one.wait()).stdout, 'through stdin\n')

    const cat = await sbx.commands.run('cat', { background: true, stdin: true })
    await sbx.commands.sendStdin(cat.pid, 'until eof')
    await sbx.commands.closeStdin(cat.pid)
    assert.equal((await cat.wait()).stdout, 'until eof')
  })
})

test('a command past its timeout rejects with TimeoutError', async () => {
  await withSandbox(async (sbx) => {
    const started = Date.now()
    await assert.rejects(sbx.commands.run('sleep 30', { timeoutMs: 1000 }), TimeoutError)
    assert.ok(Date.now() - started < 15_000)
  })
})

test('files: write, read, list, exists, make a directory, rename, remove', async () => {
  await withSandbox(async (sbx) => {
    const files = sbx.files
    await files.write('/tmp/work/hello.txt', 'hello from the sdk')
    assert.equal(await files.read('/tmp/work/hello.txt'), 'hello from the sdk')
    const bytes = new Uint8Array([0, 1, 98, 121, 116, 101, 115, 255])
    await files.write('relative.bin', bytes)
    assert.deepEqual(await files.read('/home/user/relative.bin', { format: 'bytes' }), bytes)

    assert.equal(await files.exists('/tmp/work/hello.txt'), true)
    assert.equal(await files.exists('/tmp/work/absent.txt'), false)
    await assert.rejects(files.read('/tmp/work/absent.txt'), NotFoundError)

    assert.equal(await files.makeDir('/tmp/work/sub'), true)
    assert.equal(await files.makeDir('/tmp/work/sub'), false)
    const entries = await files.list('/tmp/work')
    assert.deepEqual(
      Object.fromEntries(entries.map((e) => [e.name, e.type])),
      { 'hello.txt': 'file', sub: 'dir' },
    )
    assert.equal((await files.getInfo('/tmp/work/hello.txt')).size, 18)

    const written = await files.write([
      { path: '/tmp/work/a.txt', data: 'a' },
      { path: '/tmp/work/b.txt', data: 'b' },
    ])
    assert.deepEqual(written.map((w) => w.path).sort(), ['/tmp/work/a.txt', '/tmp/work/b.txt'])
    assert.equal(await files.read('/tmp/work/b.txt'), 'b')

    const moved = await files.rename('/tmp/work/hello.txt', '/tmp/work/sub/moved.txt')
    assert.equal(moved.path, '/tmp/work/sub/moved.txt')
    assert.equal(await files.exists('/tmp/work/hello.txt'), false)
    assert.equal(await files.read('/tmp/work/sub/moved.txt'), 'hello from the sdk')
    assert.equal((await sbx.commands.run('cat /tmp/work/sub/moved.txt')).stdout, 'hello from the sdk')

    await files.remove('/tmp/work/sub/moved.txt')
    assert.equal(await files.exists('/tmp/work/sub/moved.txt'), false)
    await files.remove('/tmp/work')
    assert.equal(await files.exists('/tmp/work'), false)
  })
})

test('files: watch a directory, gzip both ways, rename a directory', async () => {
  await withSandbox(async (sbx) => {
    const files = sbx.files
    await files.makeDir('/tmp/watched')
    const seen = []
    const watcher = await files.watchDir('/tmp/watched', (e) => seen.push(e), { recursive: true })
    await files.write('/tmp/watched/in/s.txt', 'streamed')
    const has = (type, name) => seen.some((e) => e.type === type && e.name === name)
    for (let i = 0; i < 50 && !has(FilesystemEventType.WRITE, 'in/s.txt'); i++) {
      await new Promise((r) => setTimeout(r, 100))
    }
    await watcher.stop()
    assert.ok(has(FilesystemEventType.CREATE, 'in/s.txt'), JSON.stringify(seen))
    assert.ok(has(FilesystemEventType.WRITE, 'in/s.txt'), JSON.stringify(seen))
    await assert.rejects(files.watchDir('/tmp/never-made', () => {}), NotFoundError)

    const text = 'squeeze me '.repeat(500)
    await files.write('/tmp/gz.txt', text, { gzip: true })
    assert.equal(await files.read('/tmp/gz.txt'), text)
    assert.equal(await files.read('/tmp/gz.txt', { gzip: true }), text)

    await files.write('/tmp/tree/sub/two.txt', '2')
    const moved = await files.rename('/tmp/tree', '/tmp/moved')
    assert.equal(moved.path, '/tmp/moved')
    assert.equal(await files.read('/tmp/moved/sub/two.txt'), '2')
    assert.equal(await files.exists('/tmp/tree'), false)
  })
})

test('two sandboxes stay apart', async () => {
  const first = await Sandbox.create()
  const second = await Sandbox.create()
  try {
    assert.notEqual(first.sandboxId, second.sandboxId)
    await first.files.write('/tmp/mine.txt', 'first')
    await second.files.write('/tmp/mine.txt', 'second')
    assert.equal(await first.files.read('/tmp/mine.txt'), 'first')
    assert.equal(await second.files.read('/tmp/mine.txt'), 'second')
    await first.files.write('/tmp/only-first.txt', 'x')
    assert.equal(await second.files.exists('/tmp/only-first.txt'), false)
    assert.equal((await second.commands.run('cat /tmp/mine.txt')).stdout, 'second')

    const handle = await first.commands.run('sleep 60', { background: true })
    assert.deepEqual(await pids(first), [handle.pid])
    assert.deepEqual(await pids(second), [])
    await first.commands.kill(handle.pid)
  } finally {
    await first.kill()
    await second.kill()
  }
})

// A terminal: bash on a pty, on a backend with terminals that runs a real
// bash (linux; the memory backend's simulated shell is not interactive
// bash, and the others have no terminals).
test('a pty takes keystrokes, resizes and exits with its code', async (t) => {
  const backend = process.env.CORRAL_BACKEND ?? 'memory'
  if (backend !== 'linux') {
    t.skip(`the ${backend} backend has no terminal running a real bash (linux has)`)
    return
  }
  await withSandbox(async (sbx) => {
    let shown = ''
    const seen = []
    const decoder = new TextDecoder()
    const handle = await sbx.pty.create({
      cols: 80,
      rows: 24,
      timeoutMs: 60_000,
      onData: (data) => {
        shown += decoder.decode(data, { stream: true })
        for (const w of seen.splice(0)) w()
      },
    })
    const until = async (needle) => {
      for (let i = 0; i < 300 && !shown.includes(needle); i++) {
        await new Promise((resolve) => {
          seen.push(resolve)
          setTimeout(resolve, 100)
        })
      }
      assert.ok(shown.includes(needle), `${JSON.stringify(needle)} never shown: ${JSON.stringify(shown)}`)
    }
    const type = (text) => sbx.pty.sendInput(handle.pid, new TextEncoder().encode(text))
    await type('echo hi-$((1+2))\n')
    await until('hi-3')
    await sbx.pty.resize(handle.pid, { cols: 132, rows: 43 })
    await type('stty size\n')
    await until('43 132')
    await type('exit 3\n')
    await assert.rejects(handle.wait(), (e) => {
      assert.ok(e instanceof CommandExitError, String(e))
      assert.equal(e.exitCode, 3)
      return true
    })
  })
})
