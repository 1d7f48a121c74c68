/**
 * The message machine, compiled to a transition table. Pure: no I/O.
 *
 * Why: interpreting the machine with XState for every step of every message (actor scope,
 * microstep, snapshot objects, persisted snapshots) cost about 40% of a drain's CPU. This module
 * reads the machine's own definition once, at load, into a table keyed by state and event type:
 * for each candidate transition, its guard, its target and its assign actions, all taken from the
 * machine. A step evaluates the machine's guards and applies the machine's assign functions to a
 * plain `{ value, context }` state. The machine stays the single source of truth: nothing here
 * names a state or an event, and a change to the machine changes the table with it.
 *
 * The compiler supports exactly what a flat machine of assigns needs (atomic and final states,
 * named or inline guards, assign actions, named or inline). Anything else (nested states, entry or
 * exit actions, `always`, `after`, invoke, other action kinds) throws at load, so a machine that
 * outgrows it fails loudly, never silently. `test/unit/machines/compiled.test.ts` enumerates every
 * (state, event, guard outcome) and checks the table against XState's own `transition()`.
 */
import type { AnyStateMachine } from 'xstate';
import { messageMachine, type MessageContext, type MessageEvent, type MessageInput, type MessageState } from './message.machine.js';

/** A message's machine state as plain data: what the row stores, column by column. */
export interface MessageMachineState {
  value: MessageState;
  context: MessageContext;
}

/** The persisted-snapshot JSON shape XState uses (the row's generated `snapshot` column). */
export interface PersistedMessage {
  status: 'active' | 'done';
  value: MessageState;
  historyValue: Record<string, never>;
  context: MessageContext;
  children: Record<string, never>;
}

/** Raised when an event is not accepted in the state: a bug, or a corrupt row. */
export class IllegalTransitionError extends Error {
  /** Names the state and the refused event. */
  constructor(
    readonly from: string,
    readonly event: string,
  ) {
    super(`The message machine does not accept ${event} in state ${from}`);
    this.name = 'IllegalTransitionError';
  }
}

type Args = { context: MessageContext; event: MessageEvent };
type Guard = (args: Args) => boolean;
type Assign = (context: MessageContext, event: MessageEvent) => MessageContext;

interface CompiledTransition {
  /** The guard's name (or 'inline'), for the equivalence test's enumeration. */
  guardName: string | null;
  guard: Guard | null;
  target: MessageState;
  assigns: Assign[];
}

/** The compiled machine: a step function and the table it runs on. */
export interface CompiledMachine {
  /** The initial state for `input`, from the machine's own initial state and context factory. */
  initial(input: MessageInput): MessageMachineState;
  /** The next state for `event`; throws IllegalTransitionError if the event is refused. */
  step(state: MessageMachineState, event: MessageEvent): MessageMachineState;
  /** Whether `event`'s type has any transition in `state`. */
  accepts(state: MessageState, eventType: MessageEvent['type']): boolean;
  /** XState's persisted-snapshot shape of a state, as the row's `snapshot` column holds it. */
  persist(state: MessageMachineState): PersistedMessage;
  /** Every state and its final flag, in definition order. */
  readonly states: readonly { value: MessageState; final: boolean }[];
  /** The table itself, for tests: state → event type → candidate transitions in order. */
  readonly table: ReadonlyMap<MessageState, ReadonlyMap<string, readonly CompiledTransition[]>>;
}

/** Compiles `machine` (the message machine by default). */
export function compileMachine(machine: AnyStateMachine = messageMachine): CompiledMachine {
  const root = machine.root as unknown as CompilerNode;
  const impl = machine.implementations as { guards: Record<string, unknown>; actions: Record<string, unknown> };
  const unsupported = (what: string) => new Error(`compileMachine: ${what} is not supported; extend machines/compiled.ts with it`);
  if (Object.keys(root.states).length === 0) throw unsupported('a machine without states');
  if (root.entry.length || root.exit.length || root.invoke.length || root.transitions.size) throw unsupported('root-level behaviour');

  const table = new Map<MessageState, Map<string, CompiledTransition[]>>();
  const states: { value: MessageState; final: boolean }[] = [];
  for (const [key, node] of Object.entries(root.states)) {
    const value = key as MessageState;
    if (node.type !== 'atomic' && node.type !== 'final') throw unsupported(`state "${key}" of type ${node.type}`);
    if (node.entry.length || node.exit.length) throw unsupported(`entry/exit actions on "${key}"`);
    if (node.invoke.length) throw unsupported(`invoke on "${key}"`);
    if (node.always?.length || node.after?.length) throw unsupported(`always/after on "${key}"`);
    states.push({ value, final: node.type === 'final' });
    const byEvent = new Map<string, CompiledTransition[]>();
    for (const [eventType, transitions] of node.transitions) {
      byEvent.set(
        eventType,
        transitions.map((t) => {
          if (!t.target || t.target.length !== 1) throw unsupported(`a transition on ${eventType} in "${key}" without exactly one target`);
          if (t.target[0]!.parent !== root) throw unsupported(`a transition to a nested state`);
          return {
            guardName: t.guard === undefined ? null : typeof t.guard === 'string' ? t.guard : 'inline',
            guard: t.guard === undefined ? null : resolveGuard(t.guard),
            target: t.target[0]!.key as MessageState,
            assigns: t.actions.map(resolveAssign),
          };
        }),
      );
    }
    table.set(value, byEvent);
  }

  function resolveGuard(guard: unknown): Guard {
    if (typeof guard === 'string') {
      const named = impl.guards[guard];
      if (typeof named !== 'function') throw unsupported(`guard "${guard}" (not a function)`);
      return named as Guard;
    }
    if (typeof guard === 'function' && !('type' in guard)) return guard as Guard;
    throw unsupported('a parameterised or higher-order guard');
  }

  function resolveAssign(action: unknown): Assign {
    const resolved = typeof action === 'string' ? impl.actions[action] : action;
    const assignment = (resolved as { type?: string; assignment?: unknown } | undefined)?.type === 'xstate.assign' ? (resolved as { assignment: unknown }).assignment : undefined;
    if (assignment === undefined) throw unsupported(`action ${typeof action === 'string' ? `"${action}"` : 'inline'} (only assign actions are)`);
    if (typeof assignment === 'function') {
      return (context, event) => ({ ...context, ...(assignment as (a: Args) => Partial<MessageContext>)({ context, event }) });
    }
    // An object of property assigners: each a value or a function of { context, event }.
    const entries = Object.entries(assignment as Record<string, unknown>);
    return (context, event) => {
      const next = { ...context } as Record<string, unknown>;
      for (const [prop, assigner] of entries) next[prop] = typeof assigner === 'function' ? (assigner as (a: Args) => unknown)({ context, event }) : assigner;
      return next as unknown as MessageContext;
    };
  }

  const initialKey = (machine.config as { initial?: unknown }).initial;
  if (typeof initialKey !== 'string' || !table.has(initialKey as MessageState)) throw unsupported('an initial state that is not a top-level state key');
  const contextFactory = (machine.config as { context?: unknown }).context;
  if (typeof contextFactory !== 'function') throw unsupported('a context that is not a factory of the input');

  return {
    initial(input) {
      return { value: initialKey as MessageState, context: (contextFactory as (a: { input: MessageInput }) => MessageContext)({ input }) };
    },
    step(state, event) {
      const candidates = table.get(state.value)?.get(event.type);
      if (candidates) {
        for (const t of candidates) {
          if (t.guard && !t.guard({ context: state.context, event })) continue;
          let context = state.context;
          for (const assign of t.assigns) context = assign(context, event);
          return { value: t.target, context };
        }
      }
      throw new IllegalTransitionError(state.value, event.type);
    },
    accepts: (state, eventType) => table.get(state)?.has(eventType) ?? false,
    persist(state) {
      const final = states.find((s) => s.value === state.value)?.final ?? false;
      return { status: final ? 'done' : 'active', value: state.value, historyValue: {}, context: state.context, children: {} };
    },
    states,
    table,
  };
}

/** The shapes of XState's state nodes the compiler reads (internal to XState, pinned exactly). */
interface CompilerNode {
  key: string;
  type: string;
  parent: CompilerNode | undefined;
  states: Record<string, CompilerNode>;
  entry: unknown[];
  exit: unknown[];
  invoke: unknown[];
  always?: unknown[];
  after?: unknown[];
  transitions: Map<string, { guard?: unknown; target?: CompilerNode[]; actions: unknown[] }[]>;
}

/** The compiled message machine (one per process). */
export const compiledMessageMachine: CompiledMachine = compileMachine();
