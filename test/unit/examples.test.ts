// What a user copies must be what the API server accepts: every VMImportSource and VMImportTask in
// examples/ is built into its typed model and validated against its CRD's schema.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import YAML from 'yaml';
import { VMImportSourceModel, VMImportTaskModel, isVMImportSource, isVMImportTask } from '../../src/api/models.ts';

const EXAMPLES = join(import.meta.dirname, '../../examples');

test('every VMImportSource and VMImportTask in examples/ matches its CRD schema', () => {
  let checked = 0;
  for (const file of readdirSync(EXAMPLES).filter((f) => f.endsWith('.yaml'))) {
    for (const doc of YAML.parseAllDocuments(readFileSync(join(EXAMPLES, file), 'utf8'))) {
      const obj = doc.toJSON() as unknown;
      const model = isVMImportTask(obj) ? new VMImportTaskModel(obj) : isVMImportSource(obj) ? new VMImportSourceModel(obj) : undefined;
      if (!model) continue;
      assert.doesNotThrow(() => model.validate(), `${file}`);
      checked++;
    }
  }
  // source.yaml, task.yaml and task-wffc.yaml hold one of our objects each at least.
  assert.ok(checked >= 3, `only ${checked} objects of our kinds found in examples/`);
});
