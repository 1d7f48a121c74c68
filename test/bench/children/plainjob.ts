/** Child entry for plainjob: RSS, loading nothing but plainjob and better-sqlite3. */
import { childMain } from '../child.js';
import { plainjobSystem } from '../systems/plainjob.js';

childMain({ system: plainjobSystem() });
