/**
 * The settings refresh of a handle that does not poll: one that only sends, pulls or receives
 * still has to see what the owner, another handle or the CLI changed (`accepting` turned off, a
 * queue's visibility timeout, a redrive policy). A running spool's poll re-reads them already.
 */
import type { Clock } from '../clock.js';
import type { SettingsRuntime } from './store.js';

/**
 * A refresh that re-reads the settings version at most once per `processor.pollIntervalMs`, and
 * not at all while `polling()` (the poll does it). One per handle: its sends and its pulls share it.
 */
export function createIdleRefresh(settings: SettingsRuntime, clock: Clock, polling: () => boolean): () => void {
  let refreshedAt = -Infinity;
  return () => {
    const now = clock.now();
    if (polling() || now - refreshedAt < settings.get().processor.pollIntervalMs) return;
    refreshedAt = now;
    try {
      settings.refresh();
    } catch {
      // A busy read keeps the settings already held; the next call tries again.
      refreshedAt = -Infinity;
    }
  };
}
