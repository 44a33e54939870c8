import { readFileSync } from 'node:fs';
import { type Config, ConfigError } from '../platform/config';
import { SecretsKeyring } from '../secrets/master-key';
import { parseCidrList } from './egress-policy';
import type { OutboundSettings } from './outbound-calls';

/**
 * A worker's outbound settings from its configuration: the master keys, and the egress policy
 * (EGRESS_PRIVATE_ALLOW, EGRESS_MAX_RESPONSE_BYTES, EGRESS_CA_FILE). A malformed CIDR or an
 * unreadable CA file stops start-up naming the variable, as every other setting does.
 */
export function outboundSettingsOf(
  config: Pick<
    Config,
    | 'secretsKey'
    | 'secretsKeyFile'
    | 'dataDir'
    | 'egressPrivateAllow'
    | 'egressMaxResponseBytes'
    | 'egressCaFile'
  >,
): OutboundSettings {
  let privateAllow;
  try {
    privateAllow = parseCidrList(config.egressPrivateAllow);
  } catch (error) {
    throw new ConfigError('EGRESS_PRIVATE_ALLOW', (error as Error).message);
  }
  let extraCa: string | null = null;
  if (config.egressCaFile !== null) {
    try {
      extraCa = readFileSync(config.egressCaFile, 'utf8');
    } catch (error) {
      throw new ConfigError(
        'EGRESS_CA_FILE',
        `cannot be read (${(error as NodeJS.ErrnoException).code ?? 'error'}): ${config.egressCaFile}`,
      );
    }
    if (!extraCa.includes('-----BEGIN CERTIFICATE-----')) {
      throw new ConfigError('EGRESS_CA_FILE', `holds no PEM certificate: ${config.egressCaFile}`);
    }
  }
  return {
    keyring: SecretsKeyring.fromConfig(config),
    policy: { privateAllow, maxResponseBytes: config.egressMaxResponseBytes, extraCa },
  };
}
