// Cluster profiles on this machine: the store, ~/.ssh/config import and atomic file writes.
export { ProfileStore, ProfileStoreError, type ProfileListing, type ProfileStoreErrorCode } from './profile-store';
export { importSshConfig, importSshConfigFile, parseSshConfig, profileFromSshConfig, type SshConfigImport, type SshConfigImportOptions } from './ssh-config';
export { writeFileAtomic, withFileLock, type AtomicWriteOptions } from '../../../trainer/util/atomic-write';
