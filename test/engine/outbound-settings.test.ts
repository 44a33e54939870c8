import path from 'node:path';
import { outboundSettingsOf } from '../../engine/integrations/outbound-settings';
import { ConfigError } from '../../engine/platform/config';

/** A worker's outbound settings come from its configuration; a bad one stops start-up naming it. */
describe('outbound settings of a worker', () => {
  const base = {
    secretsKey: 'ab'.repeat(32),
    secretsKeyFile: null,
    dataDir: '/nonexistent',
    egressPrivateAllow: '',
    egressMaxResponseBytes: 1024,
    egressCaFile: null,
  };

  test('the allow list, the response limit and the CA bundle are read', () => {
    const settings = outboundSettingsOf({
      ...base,
      egressPrivateAllow: '10.20.0.0/16, 127.0.0.1/32',
      egressCaFile: path.join(__dirname, '..', 'fixtures', 'tls', 'ca.pem'),
    });
    expect(settings.policy.privateAllow.map((c) => c.text)).toEqual(['10.20.0.0/16', '127.0.0.1/32']);
    expect(settings.policy.maxResponseBytes).toBe(1024);
    expect(settings.policy.extraCa).toContain('-----BEGIN CERTIFICATE-----');
    expect(settings.keyring.keyIds()).toHaveLength(1);
  });

  test.each([
    [{ egressPrivateAllow: '10.0.0.0/33' }, 'EGRESS_PRIVATE_ALLOW'],
    [{ egressPrivateAllow: 'intranet' }, 'EGRESS_PRIVATE_ALLOW'],
    [{ egressCaFile: '/nonexistent/ca.pem' }, 'EGRESS_CA_FILE'],
    [{ egressCaFile: path.join(__dirname, '..', '..', 'package.json') }, 'EGRESS_CA_FILE'],
  ])('%j stops start-up naming %s', (change, variable) => {
    let caught: unknown;
    try {
      outboundSettingsOf({ ...base, ...change });
    } catch (error) {
      caught = error;
    }
    expect(caught).toBeInstanceOf(ConfigError);
    expect((caught as ConfigError).variable).toBe(variable);
  });
});
