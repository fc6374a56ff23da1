import { join } from 'node:path';
import type { FenceConfig } from '../config/config';
import type { PtcConfig } from '../config/config-schema';
import type { PolicyRule } from '../policy/admit';
import { createProgramStore } from '../ptc/program-store';
import type { SandboxLimits } from '../runtime/sandbox';
import { builtinTools } from '../tools/builtin-tools';
import { createCommandTool } from '../tools/command-tool';
import type { ToolSpec } from '../tools/define-tool';
import { createPtcTool, eligibleTools } from '../tools/ptc';

/** The tools of a session and what governs them. */
export interface Toolset {
  /** Every tool, in prompt order: built-ins, registered tools, then `ptc`. */
  tools: ToolSpec[];
  /** The tools programs may call. */
  eligible: ToolSpec[];
  rules: readonly PolicyRule[];
  limits: SandboxLimits;
}

/** Sandbox limits from the `[ptc]` table of the config. */
export function sandboxLimits(ptc: PtcConfig): SandboxLimits {
  return {
    memoryBytes: ptc.memoryMb * 1024 * 1024,
    cpuTimeMs: ptc.cpuTimeSeconds * 1000,
    wallTimeMs: ptc.wallTimeSeconds * 1000,
    stackBytes: ptc.stackKb * 1024,
    maxToolCalls: ptc.maxToolCalls,
    maxConcurrentCalls: ptc.maxConcurrentCalls,
    maxOutputBytes: ptc.maxOutputKb * 1024,
  };
}

/**
 * Builds a session's tools from the config: the built-ins, one tool per `[tools.<name>]`
 * command, and the `ptc` tool over the ones programs may call. Programs' `store()` is kept in
 * the session folder.
 */
export function buildToolset(config: FenceConfig, session: { id: string; dir: string }): Toolset {
  const base = [...builtinTools(), ...Object.entries(config.tools).map(([name, tool]) => createCommandTool(name, tool))];
  const eligible = eligibleTools(base, config.ptc.eligible);
  const limits = sandboxLimits(config.ptc);
  const ptc = createPtcTool({
    tools: eligible,
    rules: config.policy,
    limits,
    store: createProgramStore(join(session.dir, 'program-store.json'), config.ptc.storeMaxKb * 1024),
    session,
  });
  return { tools: [...base, ptc], eligible, rules: config.policy, limits };
}
