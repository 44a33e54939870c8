import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { SimulationBackend } from '../../calc/backends/backend';
import { chooseBackend } from '../../calc/backends/choose';
import { typedBackend } from '../../calc/backends/typed';
import {
  describeAdapter,
  detectWebGpu,
  findVulkanLoader,
  type GpuLike,
  installWebGpu,
  VULKAN_LIBRARY_DIRS,
  vulkanSearchPath,
  isSoftwareAdapter,
  softwareOnlyVulkan,
  vulkanDriverManifests,
  webgpuAdapter,
} from '../../calc/backends/webgpu-node';
import { describeSimulationEngine } from '../../engine/calculations/simulation-engine';

/**
 * WebGPU in Node (calc/backends/webgpu-node.ts) and the probe's use of it. No GPU is needed: the
 * adapter is a stand-in where a case needs one, and the machine's own answer is checked for what it
 * is (on a machine without a Vulkan loader, the reason).
 */

const H100 = {
  vendor: 'nvidia',
  architecture: 'hopper',
  device: '0x2330',
  description: 'NVIDIA H100 80GB HBM3',
};

const fakeGpu = (answer: unknown): GpuLike => ({
  requestAdapter: async () => answer as Awaited<ReturnType<GpuLike['requestAdapter']>>,
});

test('the Vulkan loader is looked for in the given folders', () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'pas-vulkan-'));
  try {
    expect(findVulkanLoader([dir])).toBeNull();
    writeFileSync(path.join(dir, 'libvulkan.so.1'), '');
    expect(findVulkanLoader(['', '/nonexistent', dir])).toBe(path.join(dir, 'libvulkan.so.1'));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('LD_LIBRARY_PATH’s folders are searched first, then the usual ones', () => {
  expect(vulkanSearchPath('/opt/vk/lib::/x')).toEqual(['/opt/vk/lib', '/x', ...VULKAN_LIBRARY_DIRS]);
  expect(vulkanSearchPath(undefined)).toEqual([...VULKAN_LIBRARY_DIRS]);
});

test('without a Vulkan loader on Linux, Dawn is not loaded and the reason names libvulkan1', async () => {
  const gpu = await installWebGpu([], 'linux');
  expect(gpu).toMatch(/no Vulkan loader \(libvulkan\.so\.1, Debian package libvulkan1\)/);
  expect(await webgpuAdapter(gpu)).toEqual({ ok: false, reason: gpu });
  expect((globalThis as { navigator?: { gpu?: unknown } }).navigator?.gpu).toBeUndefined();
});

test('an adapter’s info is read (vendor, architecture, device), and no adapter or a failure is a reason', async () => {
  expect(await webgpuAdapter(fakeGpu({ info: H100 }))).toEqual({ ok: true, adapter: H100 });
  // The storage a chunk may bind: the smaller of the adapter's two limits.
  const limits = { maxStorageBufferBindingSize: 2 ** 32 - 4, maxBufferSize: 2 ** 31 };
  expect(await webgpuAdapter(fakeGpu({ info: H100, limits }))).toEqual({
    ok: true,
    adapter: H100,
    maxStorageBytes: 2 ** 31,
  });
  expect(await webgpuAdapter(fakeGpu({ info: { vendor: 'amd' } }))).toEqual({
    ok: true,
    adapter: { vendor: 'amd', architecture: '', device: '', description: '' },
  });
  expect(await webgpuAdapter(fakeGpu(null))).toEqual({
    ok: false,
    reason: 'no WebGPU adapter answered (no GPU driver found)',
  });
  const failing: GpuLike = {
    requestAdapter: async () => {
      throw new Error('device lost');
    },
  };
  expect(await webgpuAdapter(failing)).toEqual({ ok: false, reason: 'requestAdapter failed: device lost' });
  expect(describeAdapter(H100)).toBe('nvidia hopper (NVIDIA H100 80GB HBM3)');
  expect(describeAdapter({ vendor: '', architecture: '', device: '', description: '' })).toBe(
    'unknown adapter',
  );
});

test('this machine answers for itself: an adapter, or the reason there is none', async () => {
  const status = await detectWebGpu();
  if (findVulkanLoader(VULKAN_LIBRARY_DIRS) === null && process.platform === 'linux') {
    expect(status).toEqual({
      ok: false,
      reason: 'no Vulkan loader (libvulkan.so.1, Debian package libvulkan1) on this machine',
    });
  } else if (status.ok) {
    expect(status.adapter.vendor).not.toBe('');
  } else {
    expect(status.reason).toMatch(/adapter|webgpu package/);
  }
});

test('the pinned webgpu package (Dawn) loads in this Node and answers requestAdapter without aborting', () => {
  // A process of its own: webgpu 0.2.9, gpu.js's own pin, aborted Node 24 (an abseil clash).
  const script = `
    const { create, globals } = await import('webgpu');
    const gpu = create([]);
    const adapter = await gpu.requestAdapter();
    console.log(JSON.stringify({ globals: typeof globals.GPUBufferUsage, adapter: adapter === null ? null : 'found' }));
  `;
  const result = spawnSync(process.execPath, ['--input-type=module', '-e', script], {
    cwd: path.resolve(__dirname, '..', '..'),
    encoding: 'utf8',
    timeout: 60_000,
  });
  expect({ status: result.status, signal: result.signal }).toEqual({ status: 0, signal: null });
  const answer = JSON.parse(result.stdout.trim().split('\n').pop()!) as {
    globals: string;
    adapter: string | null;
  };
  expect(['object', 'function']).toContain(answer.globals);
  expect([null, 'found']).toContain(answer.adapter);
  const { version } = JSON.parse(
    readFileSync(path.resolve(__dirname, '..', '..', 'node_modules', 'webgpu', 'package.json'), 'utf8'),
  ) as { version: string };
  expect(Number(version.split('.')[1])).toBeGreaterThanOrEqual(6);
});

/** A stand-in backend that takes `ms` per simulation (the chooser only times them). */
function standIn(name: SimulationBackend['name'], ms: number, adapter?: typeof H100): SimulationBackend {
  const typed = typedBackend();
  return {
    name,
    detail: `stand-in, ${ms} ms`,
    ...(adapter ? { adapter } : {}),
    simulate: async (scenario, options) => {
      const started = performance.now();
      const result = await typed.simulate(scenario, { ...options, paths: 64 });
      while (performance.now() - started < ms) await new Promise((resolve) => setTimeout(resolve, 1));
      return result;
    },
    close: async () => undefined,
  };
}

test('the probe skips gpujs, saying why, where no WebGPU adapter answers', async () => {
  const created: string[] = [];
  const { backend, timings } = await chooseBackend({
    candidates: ['typed', 'gpujs'],
    threads: 2,
    clock: () => performance.now(),
    webgpu: async () => ({ ok: false, reason: 'no WebGPU adapter answered (no GPU driver found)' }),
    create: async (name) => {
      created.push(name);
      return standIn(name, 5);
    },
  });
  expect(backend.name).toBe('typed');
  expect(created).toEqual(['typed']);
  expect(timings.gpujs).toBe('skipped: no WebGPU adapter answered (no GPU driver found)');
});

test('with an adapter the probe times gpujs and keeps it when it is the fastest; the health check names the adapter', async () => {
  const { backend, timings } = await chooseBackend({
    candidates: ['typed', 'wasm', 'gpujs'],
    threads: 2,
    clock: () => performance.now(),
    webgpu: async () => ({ ok: true, adapter: H100 }),
    create: async (name) => standIn(name, name === 'gpujs' ? 0 : 30, name === 'gpujs' ? H100 : undefined),
  });
  expect(backend.name).toBe('gpujs');
  expect(typeof timings.gpujs).toBe('number');
  expect(timings.gpujs as number).toBeLessThan(timings.typed as number);
  const described = describeSimulationEngine({ backend, chosenBy: 'probe', probe: timings, chosenAt: null });
  expect(described.gpu_adapter).toEqual(H100);

  // Slower than the CPU backends, it is not kept even with an adapter.
  const slow = await chooseBackend({
    candidates: ['typed', 'gpujs'],
    threads: 2,
    clock: () => performance.now(),
    webgpu: async () => ({ ok: true, adapter: H100 }),
    create: async (name) => standIn(name, name === 'gpujs' ? 40 : 0),
  });
  expect(slow.backend.name).toBe('typed');
  expect(
    describeSimulationEngine({ backend: slow.backend, chosenBy: 'probe', probe: {}, chosenAt: null }),
  ).not.toHaveProperty('gpu_adapter');
});

/** What Mesa's lavapipe answers in Dawn (issue 42's measurement on this machine's kind). */
const LLVMPIPE = {
  vendor: 'mesa',
  architecture: 'software',
  device: 'llvmpipe-llvm-15-0-6-256-bits-',
  description: 'llvmpipe: Mesa 25.0.7-2~bpo12+1 (LLVM 15.0.6) 0.0.1',
};

test('a software adapter (lavapipe, SwiftShader, or one WebGPU marks as a fallback) is known as such', async () => {
  expect(await webgpuAdapter(fakeGpu({ info: LLVMPIPE }))).toEqual({
    ok: true,
    adapter: LLVMPIPE,
    software: true,
  });
  const swiftshader = {
    vendor: 'google',
    architecture: 'swiftshader',
    device: '',
    description: 'SwiftShader Device',
  };
  expect(isSoftwareAdapter(swiftshader)).toBe(true);
  // WebGPU's own signal, in the info (newer) or on the adapter (older).
  expect(await webgpuAdapter(fakeGpu({ info: { vendor: 'x', isFallbackAdapter: true } }))).toMatchObject({
    ok: true,
    software: true,
  });
  expect(await webgpuAdapter(fakeGpu({ info: { vendor: 'x' }, isFallbackAdapter: true }))).toMatchObject({
    software: true,
  });
  // A GPU is none of these.
  expect(isSoftwareAdapter(H100)).toBe(false);
  expect(await webgpuAdapter(fakeGpu({ info: H100 }))).not.toHaveProperty('software');
});

test('the probe never times or keeps a software adapter, and says which it skipped', async () => {
  const created: string[] = [];
  const { backend, timings } = await chooseBackend({
    candidates: ['typed', 'wasm', 'gpujs'],
    threads: 2,
    clock: () => performance.now(),
    webgpu: async () => ({ ok: true, adapter: LLVMPIPE, software: true }),
    // Even a software adapter that would time fastest is not tried.
    create: async (name) => {
      created.push(name);
      return standIn(name, name === 'gpujs' ? 0 : 20);
    },
  });
  expect(created).toEqual(['typed', 'wasm']);
  expect(backend.name).not.toBe('gpujs');
  expect(timings.gpujs).toBe(
    'skipped: software adapter (mesa software (llvmpipe: Mesa 25.0.7-2~bpo12+1 (LLVM 15.0.6) 0.0.1))',
  );
  await backend.close();
});

describe('the Vulkan drivers the loader would read, without starting it', () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'pas-icd-'));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));
  const manifest = (folder: string, name: string, library: string) => {
    const file = path.join(dir, folder, name);
    spawnSync('mkdir', ['-p', path.dirname(file)]);
    writeFileSync(file, JSON.stringify({ file_format_version: '1.0.0', ICD: { library_path: library } }));
    return file;
  };

  test('the loader’s search order: VK_DRIVER_FILES (or VK_ICD_FILENAMES) alone, else the XDG and system folders, plus VK_ADD_DRIVER_FILES', () => {
    const lvp = manifest(
      'share/vulkan/icd.d',
      'lvp_icd.x86_64.json',
      '/usr/lib/x86_64-linux-gnu/libvulkan_lvp.so',
    );
    const nv = manifest('etc/vulkan/icd.d', 'nvidia_icd.json', 'libGLX_nvidia.so.0');
    const home = manifest('home/.config/vulkan/icd.d', 'mine.json', 'libvulkan_radeon.so');
    const added = manifest('added', 'swiftshader.json', './libvk_swiftshader.so');
    const xdg = { XDG_DATA_DIRS: path.join(dir, 'share'), XDG_CONFIG_DIRS: path.join(dir, 'etc') };
    const homeDir = path.join(dir, 'home');
    // This machine's own /etc/vulkan and /usr/local/etc/vulkan are searched too; only ours are compared.
    const ours = (files: string[]) => files.filter((file) => file.startsWith(dir));
    // Folders named by XDG: the config ones first, the data ones after.
    expect(ours(vulkanDriverManifests(xdg, homeDir))).toEqual([home, nv, lvp]);
    expect(ours(vulkanDriverManifests({ ...xdg, VK_ADD_DRIVER_FILES: added }, homeDir))).toEqual([
      home,
      nv,
      lvp,
      added,
    ]);
    // An explicit list replaces the search; a listed folder stands for its .json files.
    expect(vulkanDriverManifests({ ...xdg, VK_ICD_FILENAMES: lvp }, homeDir)).toEqual([lvp]);
    expect(
      vulkanDriverManifests({ ...xdg, VK_DRIVER_FILES: path.dirname(nv), VK_ICD_FILENAMES: lvp }, homeDir),
    ).toEqual([nv]);
    expect(vulkanDriverManifests({ VK_ICD_FILENAMES: path.join(dir, 'none.json') }, homeDir)).toEqual([]);
  });

  test('only where every driver is the CPU (lavapipe, SwiftShader) is it named; a GPU driver, an unreadable manifest or none at all: null', () => {
    const lvp = manifest('a', 'lvp_icd.json', '/opt/mesa/libvulkan_lvp.so');
    const swift = manifest('a', 'swiftshader.json', './libvk_swiftshader.so');
    const nv = manifest('b', 'nvidia_icd.json', 'libGLX_nvidia.so.0');
    const broken = path.join(dir, 'broken.json');
    writeFileSync(broken, '{ not json');
    expect(softwareOnlyVulkan([lvp])).toBe('libvulkan_lvp.so (lvp_icd.json)');
    expect(softwareOnlyVulkan([lvp, swift])).toBe(
      'libvulkan_lvp.so (lvp_icd.json), libvk_swiftshader.so (swiftshader.json)',
    );
    expect(softwareOnlyVulkan([lvp, nv])).toBeNull();
    expect(softwareOnlyVulkan([lvp, broken])).toBeNull();
    expect(softwareOnlyVulkan([path.join(dir, 'missing.json')])).toBeNull();
    expect(softwareOnlyVulkan([])).toBeNull();
  });

  test('the probe skips gpujs without starting WebGPU where lavapipe is the only driver, and asks WebGPU where a GPU driver is beside it', async () => {
    const lvp = manifest('a', 'lvp_icd.json', '/opt/mesa/libvulkan_lvp.so');
    const nv = manifest('b', 'nvidia_icd.json', 'libGLX_nvidia.so.0');
    const created: string[] = [];
    const probe = (vulkanDrivers: string[]) =>
      chooseBackend({
        candidates: ['typed', 'gpujs'],
        threads: 2,
        clock: () => performance.now(),
        vulkanDrivers,
        vulkanDirs: [path.join(dir, 'no-loader-here')],
        create: async (name) => {
          created.push(name);
          return standIn(name, 20);
        },
      });
    const alone = await probe([lvp]);
    expect(alone.timings.gpujs).toBe(
      'skipped: software adapter (libvulkan_lvp.so (lvp_icd.json), the only Vulkan driver here: WebGPU not started)',
    );
    await alone.backend.close();
    // With a GPU's driver beside it WebGPU is asked (here: no loader in the folders given, so it says so).
    const beside = await probe([lvp, nv]);
    expect(beside.timings.gpujs).toMatch(/^skipped: no Vulkan loader/);
    await beside.backend.close();
    expect(created).toEqual(['typed', 'typed']);
  });
});
