/**
 * WebGPU in Node for gpu.js: Node has no `navigator.gpu`, so gpu.js's `GPU.isWebGPUAvailable()` is
 * false everywhere and its webgpu mode never runs. The `webgpu` package (Dawn, pinned ≥ 0.6 over
 * gpu.js's own pin in package.json's `overrides`: 0.2.9 aborts Node 24) provides one. This module
 * installs it, once, and asks it for an adapter: on a GPU server that is the GPU through Vulkan
 * (libvulkan1 plus the driver's ICD); elsewhere there is none and the reason says why.
 *
 * Dawn is loaded only where a Vulkan loader exists (on Linux, libvulkan.so.1 in the usual library
 * folders): without one it can find no GPU anyway, and loading it would print Dawn's own warning on
 * every start of a machine without a GPU.
 */
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';

/** What the health check shows of the adapter (WebGPU's GPUAdapterInfo). */
export interface GpuAdapterInfo {
  readonly vendor: string;
  readonly architecture: string;
  readonly device: string;
  readonly description: string;
}

export type WebGpuStatus =
  | {
      readonly ok: true;
      readonly adapter: GpuAdapterInfo;
      /** The most bytes one storage buffer may bind on it (absent where the adapter does not say). */
      readonly maxStorageBytes?: number;
      /**
       * Set (true) when the adapter is the CPU, not a GPU: Mesa's lavapipe (llvmpipe), SwiftShader,
       * or an adapter WebGPU itself marks as a fallback. It computes exactly, and slowly.
       */
      readonly software?: true;
    }
  | { readonly ok: false; readonly reason: string };

/** The part of `navigator.gpu` used here. */
export interface GpuLike {
  requestAdapter(options?: { powerPreference?: 'high-performance' | 'low-power' }): Promise<{
    info?: Partial<GpuAdapterInfo> & { isFallbackAdapter?: boolean };
    limits?: { maxStorageBufferBindingSize?: number; maxBufferSize?: number };
    /** Older WebGPU implementations said it on the adapter, newer ones in its info. */
    isFallbackAdapter?: boolean;
  } | null>;
}

/** Folders the dynamic loader searches for libvulkan.so.1 on Debian, Ubuntu and Red Hat. */
export const VULKAN_LIBRARY_DIRS: readonly string[] = [
  '/usr/lib/x86_64-linux-gnu',
  '/usr/lib/aarch64-linux-gnu',
  '/lib/x86_64-linux-gnu',
  '/lib/aarch64-linux-gnu',
  '/usr/lib64',
  '/usr/lib',
  '/usr/local/lib',
];

/** The folders to search: LD_LIBRARY_PATH's (given by the caller: calc/ reads no environment), then the usual ones. */
export function vulkanSearchPath(ldLibraryPath: string | undefined): string[] {
  return [...(ldLibraryPath ?? '').split(':').filter((dir) => dir !== ''), ...VULKAN_LIBRARY_DIRS];
}

/** Where libvulkan.so.1 is, in `dirs` (the caller adds LD_LIBRARY_PATH's), or null. */
export function findVulkanLoader(dirs: readonly string[] = VULKAN_LIBRARY_DIRS): string | null {
  for (const dir of dirs) {
    const candidate = path.join(dir, 'libvulkan.so.1');
    if (dir !== '' && existsSync(candidate)) return candidate;
  }
  return null;
}

const navigatorOf = () => (globalThis as { navigator?: { gpu?: GpuLike } }).navigator;

let installed: Promise<GpuLike | string> | null = null;

/**
 * `navigator.gpu` for this process: the one already there (a browser-like host, or a test's stand-in),
 * else Dawn's from the `webgpu` package with its WebGPU globals (GPUBufferUsage, …), installed once.
 * Answers the reason as a string where there can be none.
 */
export function installWebGpu(
  libraryDirs: readonly string[] = VULKAN_LIBRARY_DIRS,
  platform: NodeJS.Platform = process.platform,
): Promise<GpuLike | string> {
  const existing = navigatorOf()?.gpu;
  if (existing) return Promise.resolve(existing);
  if (platform === 'linux' && findVulkanLoader(libraryDirs) === null) {
    return Promise.resolve('no Vulkan loader (libvulkan.so.1, Debian package libvulkan1) on this machine');
  }
  installed ??= (async () => {
    let dawn: { create(flags: string[]): GpuLike; globals: Record<string, unknown> };
    try {
      dawn = (await import('webgpu')) as unknown as typeof dawn;
    } catch (error) {
      return `the webgpu package did not load: ${error instanceof Error ? error.message : String(error)}`;
    }
    const gpu = dawn.create([]);
    for (const [name, value] of Object.entries(dawn.globals)) {
      if (!(name in globalThis)) Object.defineProperty(globalThis, name, { value, configurable: true });
    }
    // Node 21+ has a `navigator` (hardwareConcurrency, userAgent, …) but no `gpu` on it.
    const host = navigatorOf();
    if (host) Object.defineProperty(host, 'gpu', { value: gpu, configurable: true });
    else Object.defineProperty(globalThis, 'navigator', { value: { gpu }, configurable: true });
    return gpu;
  })();
  return installed;
}

/** The adapter WebGPU answers with (high-performance preferred), or why there is none. */
export async function webgpuAdapter(gpu: GpuLike | string): Promise<WebGpuStatus> {
  if (typeof gpu === 'string') return { ok: false, reason: gpu };
  let adapter: Awaited<ReturnType<GpuLike['requestAdapter']>>;
  try {
    adapter = await gpu.requestAdapter({ powerPreference: 'high-performance' });
  } catch (error) {
    return {
      ok: false,
      reason: `requestAdapter failed: ${error instanceof Error ? error.message : String(error)}`,
    };
  }
  if (adapter === null) return { ok: false, reason: 'no WebGPU adapter answered (no GPU driver found)' };
  const info = adapter.info ?? {};
  const { maxStorageBufferBindingSize: binding, maxBufferSize: buffer } = adapter.limits ?? {};
  const software = isSoftwareAdapter(
    info,
    info.isFallbackAdapter === true || adapter.isFallbackAdapter === true,
  );
  return {
    ok: true,
    ...(binding !== undefined && buffer !== undefined ? { maxStorageBytes: Math.min(binding, buffer) } : {}),
    ...(software ? { software: true as const } : {}),
    adapter: {
      vendor: info.vendor ?? '',
      architecture: info.architecture ?? '',
      device: info.device ?? '',
      description: info.description ?? '',
    },
  };
}

/** The CPU implementations of Vulkan and WebGPU, by the names their adapters give. */
const SOFTWARE_ADAPTER = /llvmpipe|lavapipe|swiftshader|software rasteri[sz]er/i;

/**
 * Whether an adapter is the CPU: WebGPU's own signal (`isFallbackAdapter`), or an adapter that
 * names a software implementation (lavapipe reports `llvmpipe (LLVM …)`, SwiftShader its name).
 */
export function isSoftwareAdapter(info: Partial<GpuAdapterInfo>, fallback = false): boolean {
  if (fallback) return true;
  return [info.vendor, info.architecture, info.device, info.description].some(
    (text) => typeof text === 'string' && SOFTWARE_ADAPTER.test(text),
  );
}

/** Vulkan drivers that are the CPU: Mesa's lavapipe and Google's SwiftShader, by their libraries. */
const SOFTWARE_DRIVER = /^(libvulkan_lvp|libvk_swiftshader)\.so/;

/**
 * The Vulkan driver manifests (ICD JSON files) the Vulkan loader reads on Linux, in its documented
 * search order: VK_DRIVER_FILES (or the older VK_ICD_FILENAMES) alone where set, else the XDG config
 * folders, /etc and /usr/local/etc, and the XDG data folders (default /usr/local/share:/usr/share),
 * each with vulkan/icd.d; plus VK_ADD_DRIVER_FILES. `env` and `home` come from the caller (calc/
 * reads no environment). A listed folder stands for the .json files in it.
 */
export function vulkanDriverManifests(
  env: Readonly<Record<string, string | undefined>>,
  home: string,
): string[] {
  const listed = (value: string | undefined) => (value ?? '').split(':').filter((entry) => entry !== '');
  const expand = (entry: string): string[] => {
    try {
      if (!statSync(entry).isDirectory()) return [entry];
      return readdirSync(entry)
        .filter((name) => name.endsWith('.json'))
        .sort()
        .map((name) => path.join(entry, name));
    } catch {
      return [];
    }
  };
  const added = listed(env.VK_ADD_DRIVER_FILES).flatMap(expand);
  const only = listed(env.VK_DRIVER_FILES || env.VK_ICD_FILENAMES);
  if (only.length > 0) return [...only.flatMap(expand), ...added];
  const configDirs = listed(env.XDG_CONFIG_DIRS);
  const dataDirs = listed(env.XDG_DATA_DIRS);
  const roots = [
    env.XDG_CONFIG_HOME || path.join(home, '.config'),
    ...(configDirs.length > 0 ? configDirs : ['/etc/xdg']),
    '/etc',
    '/usr/local/etc',
    env.XDG_DATA_HOME || path.join(home, '.local', 'share'),
    ...(dataDirs.length > 0 ? dataDirs : ['/usr/local/share', '/usr/share']),
  ];
  return [...roots.flatMap((root) => expand(path.join(root, 'vulkan', 'icd.d'))), ...added];
}

/**
 * Where every Vulkan driver the loader would read is the CPU (lavapipe, SwiftShader), names them
 * ("libvulkan_lvp.so (lvp_icd.json)"); otherwise null: a GPU's driver among them, a manifest that
 * cannot be read, or none at all. Then WebGPU can only answer with a software adapter, and the
 * start-up probe need not start Dawn to learn it (about 0.4 s on 2 cores).
 */
export function softwareOnlyVulkan(manifests: readonly string[]): string | null {
  if (manifests.length === 0) return null;
  const names: string[] = [];
  for (const manifest of manifests) {
    let library: unknown;
    try {
      library = (JSON.parse(readFileSync(manifest, 'utf8')) as { ICD?: { library_path?: unknown } }).ICD
        ?.library_path;
    } catch {
      return null;
    }
    if (typeof library !== 'string' || !SOFTWARE_DRIVER.test(path.basename(library))) return null;
    names.push(`${path.basename(library)} (${path.basename(manifest)})`);
  }
  return [...new Set(names)].join(', ');
}

/** Installs WebGPU where it can be and asks for an adapter: what the start-up probe checks first. */
export async function detectWebGpu(
  libraryDirs: readonly string[] = VULKAN_LIBRARY_DIRS,
): Promise<WebGpuStatus> {
  return webgpuAdapter(await installWebGpu(libraryDirs));
}

/** One line for logs and the health check: "nvidia hopper (NVIDIA H100 80GB HBM3)". */
export function describeAdapter(adapter: GpuAdapterInfo): string {
  const name =
    [adapter.vendor, adapter.architecture].filter((part) => part !== '').join(' ') || 'unknown adapter';
  const detail = adapter.description || adapter.device;
  return detail ? `${name} (${detail})` : name;
}
