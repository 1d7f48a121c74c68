/**
 * Isolation of direct subscribers. RxJS reports an error thrown by a subscriber's callback from a
 * `setTimeout`, which Node turns into an uncaught exception that kills the process. Spool's own
 * observables (`events$`, `settings$`, `watch()`) wrap each direct subscriber's callbacks instead,
 * so a throwing subscriber is reported (SUBSCRIBER_ERROR) and every other subscriber, the runtime
 * and the process carry on. A callback further down a user's own `pipe(...)` belongs to RxJS.
 */
import { Observable, type Observer, type Subscription } from 'rxjs';

/** Called with what a subscriber threw. */
export type SubscriberErrorReporter = (error: unknown, where: string) => void;

type Callbacks<T> = Partial<Observer<T>> | ((value: T) => void) | null | undefined;

/** An Observable whose direct subscribers' callbacks cannot throw into RxJS. */
class IsolatedObservable<T> extends Observable<T> {
  constructor(
    private readonly inner: Observable<T>,
    private readonly name: string,
    private readonly report: SubscriberErrorReporter,
  ) {
    super();
  }

  override subscribe(observerOrNext?: Callbacks<T>, error?: ((e: unknown) => void) | null, complete?: (() => void) | null): Subscription {
    const observer: Partial<Observer<T>> =
      typeof observerOrNext === 'function' || observerOrNext == null
        ? { next: observerOrNext ?? undefined, error: error ?? undefined, complete: complete ?? undefined }
        : observerOrNext;
    const threw = (thrown: unknown, where: string) => this.report(thrown, `A subscriber of ${this.name} threw in ${where}()`);
    // No closure per value: `next` runs for every event of a drain. Wrapping each call in a new
    // arrow function took 8 ms of 10,000 events in a profiled bench process (sendBatch), now 1-2.
    const subscription = this.inner.subscribe({
      next: (value) => {
        try {
          observer.next?.(value);
        } catch (thrown) {
          threw(thrown, 'next');
        }
      },
      error: (e) => {
        try {
          observer.error?.(e);
        } catch (thrown) {
          threw(thrown, 'error');
        }
      },
      complete: () => {
        try {
          observer.complete?.();
        } catch (thrown) {
          threw(thrown, 'complete');
        }
      },
    });
    // Operators (and firstValueFrom) subscribe with a Subscriber and ignore what subscribe()
    // returns: tie our subscription to theirs, or an unsubscribed pipe would stay attached.
    const owner = observerOrNext as { add?: unknown } | null | undefined;
    if (owner && typeof owner === 'object' && typeof owner.add === 'function') (owner as Subscription).add(subscription);
    return subscription;
  }
}

/** Wraps `source` so that each direct subscriber is isolated (see the module header). */
export function isolated<T>(source: Observable<T>, name: string, report: SubscriberErrorReporter): Observable<T> {
  return new IsolatedObservable(source, name, report);
}
