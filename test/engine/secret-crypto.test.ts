import fc from 'fast-check';
import {
  formatMasterKey,
  masterKeyOf,
  newMasterKey,
  openValue,
  parseMasterKey,
  rewrap,
  sealValue,
} from '../../engine/secrets/secret-crypto';

const context = { accountId: 'acct_A', secretId: 'secr_1' };

describe('secret envelope encryption (AES-256-GCM, a data key per secret wrapped by the master key)', () => {
  test('any value seals and opens back exactly; the sealed parts hold neither the value nor the data key', () => {
    const master = newMasterKey();
    fc.assert(
      fc.property(fc.string({ minLength: 1, maxLength: 300, unit: 'binary' }), (value) => {
        const sealed = sealValue(master, context, value);
        expect(sealed.keyId).toBe(master.id);
        if (value.length >= 8) expect(sealed.ciphertext.includes(Buffer.from(value, 'utf8'))).toBe(false);
        expect(openValue(new Map([[master.id, master]]), context, sealed)).toEqual({ value });
      }),
      { numRuns: 200 },
    );
  });

  test('two seals of one value differ (fresh data key and IVs)', () => {
    const master = newMasterKey();
    const a = sealValue(master, context, 'same');
    const b = sealValue(master, context, 'same');
    expect(a.ciphertext.equals(b.ciphertext)).toBe(false);
    expect(a.wrappedKey.equals(b.wrappedKey)).toBe(false);
  });

  test('another key, another row, another account, or one flipped bit: it does not open (never garbage)', () => {
    const master = newMasterKey();
    const keys = new Map([[master.id, master]]);
    const sealed = sealValue(master, context, 'the value');
    const other = newMasterKey();
    expect(openValue(new Map([[other.id, other]]), context, sealed)).toEqual({
      reason: 'unknown-key',
      keyId: master.id,
    });
    // The right id but other bytes (a key file edited by hand).
    expect(openValue(new Map([[master.id, other]]), context, sealed)).toEqual({
      reason: 'does-not-open',
      keyId: master.id,
    });
    expect(openValue(keys, { ...context, secretId: 'secr_2' }, sealed)).toMatchObject({
      reason: 'does-not-open',
    });
    expect(openValue(keys, { ...context, accountId: 'acct_B' }, sealed)).toMatchObject({
      reason: 'does-not-open',
    });
    for (const part of ['ciphertext', 'wrappedKey'] as const) {
      for (let i = 0; i < sealed[part].length; i += 7) {
        const altered = Buffer.from(sealed[part]);
        altered[i] = altered[i]! ^ 0x01;
        expect(openValue(keys, context, { ...sealed, [part]: altered })).toMatchObject({
          reason: 'does-not-open',
        });
      }
    }
  });

  test('rewrap moves the data key under another master key and leaves the value ciphertext as it was', () => {
    const from = newMasterKey();
    const to = newMasterKey();
    const sealed = sealValue(from, context, 'rotate me');
    const moved = rewrap(new Map([[from.id, from]]), to, context, sealed);
    if ('reason' in moved) throw new Error('did not rewrap');
    expect(moved.keyId).toBe(to.id);
    expect(moved.ciphertext.equals(sealed.ciphertext)).toBe(true);
    expect(openValue(new Map([[to.id, to]]), context, moved)).toEqual({ value: 'rotate me' });
    expect(openValue(new Map([[from.id, from]]), context, moved)).toMatchObject({ reason: 'unknown-key' });
  });

  test('a master key is read as 64 hex digits or Base64 of 32 bytes; its id never shows the key', () => {
    const key = newMasterKey();
    expect(parseMasterKey(formatMasterKey(key))?.id).toBe(key.id);
    expect(parseMasterKey(key.key.toString('hex'))?.id).toBe(key.id);
    expect(parseMasterKey(key.key.toString('base64url'))?.id).toBe(key.id);
    expect(parseMasterKey('too short')).toBeNull();
    expect(parseMasterKey(Buffer.alloc(31).toString('base64'))).toBeNull();
    expect(key.id).toMatch(/^[0-9a-f]{16}$/);
    expect(key.key.toString('hex')).not.toContain(key.id);
    expect(() => masterKeyOf(Buffer.alloc(16))).toThrow('A master key is 32 bytes; this one has 16.');
  });
});
