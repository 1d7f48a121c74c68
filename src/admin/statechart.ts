/**
 * The lifecycle viewer's drawing, made from the machine definition itself: xstate/graph's
 * `toDirectedGraph(messageMachine)` gives the states and transitions, and elkjs lays them out
 * (once per process, on first request), so a state added to the machine appears without any
 * change to the page. Parallel transitions between two states are drawn as one edge listing
 * every event.
 */
import type { DirectedGraphNode } from 'xstate/graph';
import { messageMachine } from '../index.js';

/** A state box, in SVG user units. */
export interface ChartNode {
  /** The state's name, as stored in the `state` column and announced in events. */
  id: string;
  x: number;
  y: number;
  width: number;
  height: number;
  initial: boolean;
  final: boolean;
}

/** One drawn transition: every event that leads from `source` to `target`. */
export interface ChartEdge {
  id: string;
  source: string;
  target: string;
  events: string[];
  /** The routed polyline, start to end. */
  points: { x: number; y: number }[];
  label: { x: number; y: number; width: number; height: number };
}

/** The laid-out statechart. */
export interface Statechart {
  machine: string;
  width: number;
  height: number;
  initial: string;
  nodes: ChartNode[];
  edges: ChartEdge[];
}

const FONT_WIDTH = 7.5;
const NODE_HEIGHT = 58;
const LABEL_HEIGHT = 16;

let cached: Promise<Statechart> | undefined;

/** The message statechart, laid out; computed once and shared. */
export function messageStatechart(): Promise<Statechart> {
  cached ??= layout().catch((error: unknown) => {
    cached = undefined;
    throw error;
  });
  return cached;
}

interface ElkPoint {
  x: number;
  y: number;
}
interface ElkResult {
  width?: number;
  height?: number;
  children?: { id: string; x?: number; y?: number; width?: number; height?: number }[];
  edges?: {
    id: string;
    sections?: { startPoint: ElkPoint; endPoint: ElkPoint; bendPoints?: ElkPoint[] }[];
    labels?: { x?: number; y?: number; width?: number; height?: number }[];
  }[];
}

async function layout(): Promise<Statechart> {
  // Loaded here, like elkjs below: only the dashboard's lifecycle view needs it.
  const { toDirectedGraph } = await import('xstate/graph');
  const graph = toDirectedGraph(messageMachine);
  const states = graph.children.map((child: DirectedGraphNode) => child.stateNode);
  const initial = String(messageMachine.root.config.initial ?? states[0]?.key);
  const merged = new Map<string, { source: string; target: string; events: string[] }>();
  for (const child of graph.children) {
    for (const edge of child.edges) {
      const source = edge.source.key;
      const target = edge.target.key;
      const key = `${source}->${target}`;
      const entry = merged.get(key) ?? { source, target, events: [] };
      if (!entry.events.includes(edge.label.text)) entry.events.push(edge.label.text);
      merged.set(key, entry);
    }
  }
  const edges = [...merged.entries()].map(([id, e]) => ({ id, ...e, text: e.events.join(' · ') }));
  // elkjs is loaded only when someone opens the viewer.
  // A CommonJS module: at run time its default export is the constructor itself.
  const elkModule = (await import('elkjs/lib/elk.bundled.js')) as unknown as { default: new () => { layout(graph: unknown): Promise<unknown> } };
  const elk = new elkModule.default();
  const result = (await elk.layout({
    id: 'root',
    layoutOptions: {
      'elk.algorithm': 'layered',
      'elk.direction': 'DOWN',
      // Layers follow the machine's own state order, so the initial state is on top and the
      // back edges (retries, recovery, requeue) are the ones that point up.
      'elk.layered.cycleBreaking.strategy': 'MODEL_ORDER',
      'elk.layered.considerModelOrder.strategy': 'NODES_AND_EDGES',
      'elk.edgeRouting': 'ORTHOGONAL',
      'elk.layered.spacing.nodeNodeBetweenLayers': '70',
      'elk.spacing.nodeNode': '60',
      'elk.spacing.edgeLabel': '4',
      'elk.edgeLabels.inline': 'false',
      'elk.padding': '[top=24,left=24,bottom=24,right=24]',
    },
    children: states.map((s) => ({ id: s.key, width: Math.max(120, s.key.length * 10 + 40), height: NODE_HEIGHT })),
    edges: edges.map((e) => ({
      id: e.id,
      sources: [e.source],
      targets: [e.target],
      labels: [{ text: e.text, width: e.text.length * FONT_WIDTH + 8, height: LABEL_HEIGHT }],
    })),
  })) as ElkResult;

  const nodes: ChartNode[] = (result.children ?? []).map((n) => {
    const state = states.find((s) => s.key === n.id)!;
    return { id: n.id, x: n.x ?? 0, y: n.y ?? 0, width: n.width ?? 0, height: n.height ?? 0, initial: n.id === initial, final: state.type === 'final' };
  });
  const drawn: ChartEdge[] = (result.edges ?? []).map((laid) => {
    const e = edges.find((candidate) => candidate.id === laid.id)!;
    const points = (laid.sections ?? []).flatMap((s) => [s.startPoint, ...(s.bendPoints ?? []), s.endPoint]);
    const l = laid.labels?.[0];
    return {
      id: e.id,
      source: e.source,
      target: e.target,
      events: e.events,
      points,
      label: { x: l?.x ?? 0, y: l?.y ?? 0, width: l?.width ?? 0, height: l?.height ?? 0 },
    };
  });
  return { machine: messageMachine.id, width: result.width ?? 0, height: result.height ?? 0, initial, nodes, edges: drawn };
}
