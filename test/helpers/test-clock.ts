/** The suite's controllable clock: the exported manual clock (time moves only when the test says so). */
export { createManualClock as createTestClock } from '../../src/index.js';
