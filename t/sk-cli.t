#!/usr/bin/perl
# The sk command's key and entry verbs as an operator runs them: keygen's
# backup rule and all-or-nothing writes, entry building, signing and
# verification of each registrant type, and each failure's exit status.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";

use Test::More;
use Digest::SHA ();
use MIME::Base64 ();

use SKTest;

plan skip_all => 'openssl is not installed' unless has_cmd('openssl');

my $d = tmpdir();
my $r;

# keygen: at least three backups, each 0600 and loadable.
$r = sk('keygen', '-n', 'example.com', '-o', "$d/sk.key", '-b', "$d/b1");
is($r->{rc}, 2, 'keygen with one backup is a usage error');
like($r->{err}, qr/1 backup given, at least 3 are required/, '... saying why');
ok(!-e "$d/sk.key", '... and writes nothing');

$r = sk('keygen', '-n', 'example.com', '-o', "$d/sk.key", '-b', "$d/b1",
    '-b', "$d/b2", '-b', "$d/no/such/dir/b3");
is($r->{rc}, 1, 'keygen with an unwritable backup fails');
like($r->{err}, qr{\Q$d\E/no/such/dir/b3: cannot create}, '... naming it');
ok(!-e "$d/sk.key" && !-e "$d/b1" && !-e "$d/b2",
    '... and leaves none of the files it wrote');

$r = sk('keygen', '-n', 'example.com', '-o', "$d/sk.key", '-b', "$d/b1",
    '-b', "$d/b2", '-b', "$d/b3", '--json');
is($r->{rc}, 0, 'keygen with three backups') or diag($r->{err});
like($r->{out}, qr/"fingerprint":"sha256:[0-9a-f]{64}"/, '... prints the fingerprint');
for my $f ("$d/sk.key", "$d/b1", "$d/b2", "$d/b3") {
    is((stat $f)[2] & 07777, 0600, "$f is 0600");
}
is(slurp("$d/b1"), slurp("$d/sk.key"), 'a backup holds the key');
$r = sk('keygen', '-n', 'example.com', '-o', "$d/sk.key",
    '--no-backups-i-accept-the-risk');
is($r->{rc}, 1, 'keygen never overwrites a key');
like($r->{err}, qr/already exists, refusing to overwrite/, '... saying so');
$r = sk('keygen', '-n', 'Bad_Name', '-o', "$d/x.key",
    '--no-backups-i-accept-the-risk');
is($r->{rc}, 2, 'keygen refuses a malformed name');

chmod 0644, "$d/b1";
$r = sk('pubkey', '-k', "$d/b1");
is($r->{rc}, 1, 'a world-readable private key is refused');
like($r->{err}, qr/permissions 0644 are too open/, '... naming the mode');

# A CA chain for the evidence field.
run_cmd(['openssl', 'req', '-x509', '-newkey', 'ed25519', '-nodes',
    '-keyout', "$d/ca.key", '-out', "$d/ca.pem", '-days', '2',
    '-subj', '/CN=Test CA']);
ok(-s "$d/ca.pem", 'a test CA');

sub key { sk('keygen', '-n', $_[0], '-o', "$d/$_[1]",
    '--no-backups-i-accept-the-risk') }
key('example.net', 'heir.key');
key('example.com', 'new.key');
key('example.com', 'evil.key');

# bind, and its verification with the entry's own Key.
$r = sk('entry', 'bind', '-k', "$d/sk.key", '-n', 'example.com',
    '-s', 'https,smtp;x.example.net:25', '-c', "$d/ca.pem",
    '-r', 'example.net', '-o', "$d/bind.txt");
is($r->{rc}, 0, 'entry bind') or diag($r->{err});
my $bind = slurp("$d/bind.txt");
like($bind, qr/\ABind: 1\n/, 'canonical header');
like($bind, qr/^SN: N\/A\n/m, 'the stamp is left to the timeline');
like($bind, qr/^Rebinder-Names: example\.net\n/m, 'rebinders listed');
$r = sk('entry', 'verify', '-i', "$d/bind.txt", '--json');
is($r->{rc}, 0, 'entry verify of the bind') or diag($r->{err});
like($r->{out}, qr/"good":\["SK-Signature"\],"result":"pass"/, '... JSON');
$r = sk('entry', 'verify', '-i', "$d/bind.txt", '-p', "$d/evil.key");
is($r->{rc}, 1, 'verify with another SK fails');
like($r->{err}, qr/field "SK-Signature": signature does not verify/, '... naming the field');

(my $forged = $bind) =~ s/^Services: .*$/Services: all/m;
spew("$d/forged.txt", $forged);
$r = sk('entry', 'verify', '-i', "$d/forged.txt");
is($r->{rc}, 1, 'a bind with changed Services fails verification');

(my $broken = $bind) =~ s/^Key-Type: ECC$/Key-Type: RSA/m;
spew("$d/broken.txt", $broken);
$r = sk('entry', 'verify', '-i', "$d/broken.txt");
is($r->{rc}, 1, 'a bind whose Key-Type contradicts its Key is rejected');
like($r->{err}, qr/broken\.txt: line \d+: field "Key-Type"/, '... naming file, line and field');

# unbind, change-services, rebind.
$r = sk('entry', 'change-services', '-k', "$d/sk.key", '-n', 'example.com',
    '-s', 'none', '-o', "$d/cs.txt");
is($r->{rc}, 0, 'entry change-services') or diag($r->{err});
$r = sk('entry', 'verify', '-i', "$d/cs.txt");
is($r->{rc}, 2, 'a Change-Services names no key: -p is required');
$r = sk('entry', 'verify', '-i', "$d/cs.txt", '-p', "$d/sk.key.pub");
is($r->{rc}, 0, '... and verifies with the SK') or diag($r->{err});

# A provider's MX hosts named for the domain's mail (mx=), strictly.
$r = sk('entry', 'change-services', '-k', "$d/sk.key", '-n', 'example.com',
    '-s', 'https,smtp;mx=*.mail.provider.example;mx=mx.example.net', '-o',
    "$d/cs-mx.txt");
is($r->{rc}, 0, 'entry change-services with mx= patterns') or diag($r->{err});
like(slurp("$d/cs-mx.txt"), qr/^Services: https,smtp;mx=\*\.mail\.provider\.example;mx=mx\.example\.net$/m,
    '... written as given');
for my $bad (['https;mx=mx.example.net', 'mx= patterns are for smtp, not https'],
    ['smtp;mx=a.example;10.0.0.1:25', 'route 1 after an mx= pattern'],
    ['smtp;mx=*.com', 'mx= pattern 1: name:'])
{
    $r = sk('entry', 'change-services', '-k', "$d/sk.key", '-n',
        'example.com', '-s', $bad->[0], '-o', "$d/bad.txt");
    isnt($r->{rc}, 0, "services $bad->[0]: refused");
    like($r->{err}, qr/\Q$bad->[1]\E/, '... saying why') or diag($r->{err});
}

$r = sk('entry', 'unbind', '-k', "$d/sk.key", '-n', 'example.com',
    '-l', '1700000000', '-o', "$d/unbind.txt");
is($r->{rc}, 0, 'entry unbind') or diag($r->{err});
like(slurp("$d/unbind.txt"), qr/^Last-Secure-Timestamp: 1700000000\n/m,
    '... with the last secure time');
$r = sk('entry', 'unbind', '-k', "$d/sk.key", '-n', 'example.com',
    '-l', '0170', '-o', "$d/bad.txt");
is($r->{rc}, 1, 'a timestamp with a leading zero is refused');
ok(!-e "$d/bad.txt", '... and nothing is written');

$r = sk('entry', 'rebind', '-k', "$d/new.key", '-n', 'example.com',
    '-s', 'https', '-c', "$d/ca.pem", '--rebinder', 'example.net',
    '--rebinder-key', "$d/heir.key", '-o', "$d/rebind.txt");
is($r->{rc}, 0, 'entry rebind') or diag($r->{err});
$r = sk('entry', 'verify', '-i', "$d/rebind.txt", '--rebinder-pub',
    "$d/heir.key.pub");
is($r->{rc}, 0, 'rebind verifies: its own Key and the rebinder') or diag($r->{err});
like($r->{out}, qr/^Rebinder-Signature: good$/m, '... both signatures checked');
$r = sk('entry', 'verify', '-i', "$d/rebind.txt", '--rebinder-pub',
    "$d/evil.key.pub");
is($r->{rc}, 1, 'rebind with another rebinder key fails');
like($r->{err}, qr/field "Rebinder-Signature": signature does not verify/, '... naming the field');

$r = sk('entry', 'rebind', '-k', "$d/new.key", '-n', 'example.com',
    '-s', 'https', '-c', "$d/ca.pem", '--rebinder', 'example.net');
is($r->{rc}, 2, 'rebind without the rebinder key is a usage error');
like($r->{err}, qr/missing --rebinder-key/, '... saying what is missing');
# The timeline operator's root-CA entries, signed with the operator key.
$r = sk('entry', 'add-root-ca', '-k', "$d/sk.key", '-c', "$d/ca.pem");
is($r->{rc}, 2, 'add-root-ca needs the CA update serial');
like($r->{err}, qr/missing --serial N/, '... saying so');
$r = sk('entry', 'add-root-ca', '-k', "$d/heir.key", '-c', "$d/ca.pem",
    '--serial', '65536');
is($r->{rc}, 1, 'a serial beyond 2 bytes is refused');
like($r->{err}, qr/field "CA-Serial"/, '... naming the field');
$r = sk('entry', 'add-root-ca', '-k', "$d/heir.key", '-c', "$d/ca.pem",
    '--serial', '7', '-o', "$d/add.txt");
is($r->{rc}, 0, 'entry add-root-ca') or diag($r->{err});
my $der = run_cmd(['openssl', 'x509', '-in', "$d/ca.pem", '-outform', 'DER'])->{out};
(my $b64 = MIME::Base64::encode_base64($der, '')) =~ tr{+/=}{-_}d;
like(slurp("$d/add.txt"), qr/\AAdd-Root-CA: 1\nCA-Cert: \Q$b64\E\nCA-Serial: 7\n/,
    '... carries the CA certificate as base64url DER');
$r = sk('entry', 'remove-root-ca', '-k', "$d/heir.key", '-c', "$d/ca.pem",
    '--serial', '8', '-o', "$d/rm.txt");
is($r->{rc}, 0, 'entry remove-root-ca') or diag($r->{err});
(my $h = MIME::Base64::encode_base64(Digest::SHA::sha256($der), '')) =~ tr{+/=}{-_}d;
like(slurp("$d/rm.txt"), qr/^CA-Cert-Hash: \Q$h\E$/m, '... by the SHA-256 of its DER');
for my $f ('add.txt', 'rm.txt') {
    $r = sk('entry', 'verify', '-i', "$d/$f", '--operator-pub', "$d/heir.key.pub");
    is($r->{rc}, 0, "$f: Operator-Signature verifies") or diag($r->{err});
    $r = sk('entry', 'verify', '-i', "$d/$f", '--operator-pub', "$d/evil.key.pub");
    is($r->{rc}, 1, "$f: ... and not with another key");
}
$r = sk('entry', 'bogus');
is($r->{rc}, 2, 'an unknown entry type is a usage error');
$r = sk('help', 'entry');
like($r->{out}, qr/^usage:\n  sk entry bind /, 'sk help entry');

# The TXT record of DNSSEC evidence holds the SK's SPKI SHA-256.
$r = sk('pubkey', '-p', "$d/sk.key.pub");
my ($hex) = $r->{out} =~ /sha256:([0-9a-f]{64})/;
$r = sk('dnssec', 'record', '-k', "$d/sk.key.pub", '-n', 'example.com');
is($r->{rc}, 0, 'dnssec record') or diag($r->{err});
is($r->{out}, "_sovereign-key.example.com. 3600 IN TXT \"v=sk1; "
    . "spki-sha256=$hex\"\n", '... prints the zone-file line');
$r = sk('dnssec', 'record', '-k', "$d/sk.key.pub", '-n', 'Bad_Name');
is($r->{rc}, 1, 'dnssec record refuses a malformed name');
$r = sk('dnssec', 'bogus');
is($r->{rc}, 2, 'an unknown dnssec subcommand is a usage error');

done_testing();
