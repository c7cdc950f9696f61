package SKTimeline;

# SKTimeline -- what the t/timeline-*.t tests share: a private sk-timeline,
# entries built and signed with the openssl CLI (independently of libsk),
# and an RFC 6962 model in Perl to check roots and proofs.
#
#   start_timeline(DIR, KEY => VALUE...)  config + daemon; returns a hash
#                                         { pid, port, url, dir, log, conf }
#   restart_timeline(T)                   same config, same port
#   http(METHOD, URL[, FORM])             { code, body } via curl; FORM is
#                                         the value of e=, or { FIELD => VALUE }
#   append(T, ENTRY[, REF])               POST /append e=ENTRY [ref=REF]
#   ed25519_key(DIR, NAME)                NAME.key / NAME.pub; returns path
#   spki_b64(KEYFILE)                     base64url DER SPKI
#   onion_of(KEYFILE)                     v3 .onion address of an Ed25519
#                                         key (openssl's SHA3-256, not libsk)
#   make_ca(DIR, NAME)                    self-signed CA NAME.crt/.key
#   issue(DIR, CA, SKKEY, DNSNAME, OUT[, EXT])  end-entity cert for SKKEY's
#                                         key; EXT: more extension lines
#   der_b64(CERT)                         base64url DER of a PEM cert
#   canon(TYPE, FIELDS)                   canonical text
#   sign_entry(TYPE, FIELDS, SIGFIELD, KEY, NA_FIELDS)  fills SIGFIELD
#   bind(T?, ...) helpers below build whole entries
#   incorporate_entry(REF)                an Incorporate referring to REF
#   mth(LEAVES...)                        RFC 6962 root of leaf hashes
#   verify_inclusion(LEAF, IDX, SIZE, PROOF, ROOT)
#   verify_consistency(FROM, TO, ROOT1, ROOT2, PROOF)   RFC 9162 2.1.4.2

use strict;
use warnings;

use Exporter 'import';
use Digest::SHA qw(sha256);
use MIME::Base64 qw(encode_base64 decode_base64);
use SKTest;

our @EXPORT = qw(start_timeline restart_timeline http append ed25519_key
    spki_b64 make_ca issue der_b64 canon sign_entry bind_entry unbind_entry
    cs_entry rebind_entry root_entry incorporate_entry mth leaf_hash
    verify_inclusion verify_consistency parse_entries b64url make_intermediate
    read_log onion_of);

our $TL = "$SKTest::ROOT/" . ($ENV{BUILD} // 'build') . '/sk-timeline';

my @STAMP = qw(SN TID Timestamp Signature);

sub b64url {
    my $s = encode_base64($_[0], '');
    $s =~ tr{+/}{-_};
    $s =~ s/=+$//;
    return $s;
}

sub ossl {
    my $r = run_cmd(['openssl', @_]);
    die "openssl @_: $r->{err}" if $r->{rc} != 0;
    return $r->{out};
}

sub write_conf {
    my ($t) = @_;
    my $conf = join '', map { "$_ = $t->{conf}{$_}\n" } sort keys %{$t->{conf}};
    spew("$t->{dir}/tl.conf", $conf);
}

sub start_timeline {
    my ($dir, %conf) = @_;
    my $port = free_port();
    my $t = { dir => $dir, port => $port, url => "http://127.0.0.1:$port",
        log => "$dir/tl.log",
        conf => { listen => "127.0.0.1:$port", data_dir => $dir, tid => 7,
            %conf } };
    write_conf($t);
    return restart_timeline($t);
}

sub restart_timeline {
    my ($t) = @_;
    write_conf($t);
    $t->{pid} = run_daemon([$TL, '-c', "$t->{dir}/tl.conf"], $t->{log});
    # Up once it listens; a daemon that refused to start is not waited for.
    wait_until(sub { wait_for_port($t->{port}, 0)
        || !daemon_alive($t->{pid}) }, 10);
    $t->{up} = wait_for_port($t->{port}, 0);
    return $t;
}

sub http {
    my ($method, $url, $form) = @_;
    my @cmd = ('curl', '-s', '-o', '-', '-w', '\n%{http_code}', '-X', $method);
    return parse_http(run_cmd([@cmd, $url])) unless defined $form;
    $form = { e => $form } unless ref $form;
    my @f;
    for my $k (sort keys %$form) {
        my $f = "/tmp/sk-tl-form.$$." . int(rand(1e9));
        spew($f, $form->{$k});
        push @f, $f;
        push @cmd, '--data-urlencode', "$k\@$f";
    }
    my $r = run_cmd([@cmd, $url]);
    unlink @f;
    return parse_http($r);
}

sub parse_http {
    my ($r) = @_;
    my ($body, $code) = $r->{out} =~ /\A(.*)\n(\d+)\z/s;
    return { code => $code // 0, body => $body // '' };
}

sub append {
    my ($t, $entry, $ref) = @_;
    return http('POST', "$t->{url}/append",
        defined $ref ? { e => $entry, ref => $ref } : $entry);
}

sub ed25519_key {
    my ($dir, $name) = @_;
    ossl('genpkey', '-algorithm', 'ed25519', '-out', "$dir/$name.key");
    chmod 0600, "$dir/$name.key";
    ossl('pkey', '-in', "$dir/$name.key", '-pubout', '-out', "$dir/$name.pub");
    return "$dir/$name.key";
}

sub spki_b64 {
    my ($key) = @_;
    return b64url(ossl('pkey', '-in', $key, '-pubout', '-outform', 'DER'));
}

sub onion_of {
    my ($key) = @_;
    my $pub = substr(ossl('pkey', '-in', $key, '-pubout', '-outform', 'DER'),
        -32);
    my $f = "/tmp/sk-tl-onion.$$";
    spew($f, ".onion checksum$pub\x03");
    my $sum = substr(ossl('dgst', '-sha3-256', '-binary', $f), 0, 2);
    unlink $f;
    my $bits = unpack('B*', "$pub$sum\x03");
    my @a = ('a' .. 'z', '2' .. '7');
    return join('', map { $a[oct("0b$_")] } $bits =~ /(.{5})/g) . '.onion';
}

sub make_ca {
    my ($dir, $name) = @_;
    ossl('req', '-x509', '-newkey', 'ec', '-pkeyopt',
        'ec_paramgen_curve:prime256v1', '-nodes', '-keyout', "$dir/$name.key",
        '-out', "$dir/$name.crt", '-days', '3650', '-subj', "/CN=$name",
        '-addext', 'basicConstraints=critical,CA:TRUE',
        '-addext', 'keyUsage=critical,keyCertSign,cRLSign');
    return "$dir/$name";
}

# An intermediate CA under $ca (both "$dir/$name" paths without suffix).
sub make_intermediate {
    my ($dir, $ca, $name) = @_;
    ossl('req', '-new', '-newkey', 'ec', '-pkeyopt',
        'ec_paramgen_curve:prime256v1', '-nodes', '-keyout', "$dir/$name.key",
        '-subj', "/CN=$name", '-out', "$dir/$name.csr");
    spew("$dir/$name.ext", "basicConstraints=critical,CA:TRUE\n"
        . "keyUsage=critical,keyCertSign,cRLSign\n");
    ossl('x509', '-req', '-in', "$dir/$name.csr", '-CA', "$ca.crt", '-CAkey',
        "$ca.key", '-CAcreateserial', '-days', '365', '-extfile',
        "$dir/$name.ext", '-out', "$dir/$name.crt");
    return "$dir/$name";
}

sub issue {
    my ($dir, $ca, $key, $dns, $out, $ext) = @_;
    ossl('req', '-new', '-key', $key, '-subj', "/CN=$dns", '-out', "$out.csr");
    spew("$out.ext", "subjectAltName=DNS:$dns\nbasicConstraints=CA:FALSE\n"
        . ($ext // ''));
    ossl('x509', '-req', '-in', "$out.csr", '-CA', "$ca.crt", '-CAkey',
        "$ca.key", '-CAcreateserial', '-days', '365', '-extfile', "$out.ext",
        '-out', "$out.crt");
    return "$out.crt";
}

sub der_b64 {
    my ($cert) = @_;
    return b64url(ossl('x509', '-in', $cert, '-outform', 'DER'));
}

sub canon {
    my ($type, $f) = @_;
    return "$type: 1\n" . join('', map { "$_: $f->{$_}\n" } sort keys %$f)
        . "\n";
}

# Fill $sig: sign the canonical form with $sig and @na (the fields it does
# not cover) set to N/A.
sub sign_entry {
    my ($type, $f, $sig, $key, @na) = @_;
    my %g = (%$f, map { $_ => 'N/A' } $sig, @STAMP, @na);
    my $msg = "/tmp/sk-tl-msg.$$";
    spew($msg, canon($type, \%g));
    my $s = ossl('pkeyutl', '-sign', '-rawin', '-inkey', $key, '-in', $msg);
    unlink $msg;
    $f->{$sig} = b64url($s);
    return $f;
}

sub stamp_na { return map { $_ => 'N/A' } @STAMP }

sub bind_entry {
    my (%a) = @_;
    my $f = { Name => $a{name}, 'Includes-Subdomains' => $a{subdomains} // 0,
        Key => spki_b64($a{key}), 'Key-Type' => 'ECC',
        Services => $a{services} // 'https',
        'Rebinder-Names' => $a{rebinders} // 'none',
        'CA-Cert-Chain' => $a{chain_text}
            // join(',', map { der_b64($_) } @{$a{chain}}),
        stamp_na() };
    sign_entry('Bind', $f, 'SK-Signature', $a{signer} // $a{key});
    return canon('Bind', $f);
}

sub unbind_entry {
    my (%a) = @_;
    my $f = { Name => $a{name}, 'Last-Secure-Timestamp' => $a{lst} // 0,
        stamp_na() };
    sign_entry('Unbind', $f, 'SK-Signature', $a{key});
    return canon('Unbind', $f);
}

sub cs_entry {
    my (%a) = @_;
    my $f = { Name => $a{name}, Services => $a{services}, stamp_na() };
    sign_entry('Change-Services', $f, 'SK-Signature', $a{key});
    return canon('Change-Services', $f);
}

sub rebind_entry {
    my (%a) = @_;
    my $f = { Name => $a{name}, 'Includes-Subdomains' => 0,
        Key => spki_b64($a{key}), 'Key-Type' => 'ECC',
        Services => $a{services} // 'https',
        'Rebinder-Names' => 'none', 'Rebinder-Name' => $a{rebinder},
        'CA-Cert-Chain' => join(',', map { der_b64($_) } @{$a{chain}}),
        'Rebinder-Signature' => 'N/A', stamp_na() };
    sign_entry('Rebind', $f, 'SK-Signature', $a{key}, 'Rebinder-Signature');
    sign_entry('Rebind', $f, 'Rebinder-Signature', $a{rebinder_key});
    return canon('Rebind', $f);
}

sub root_entry {
    my (%a) = @_;
    my $f = { 'CA-Cert' => der_b64($a{cert}), 'CA-Serial' => $a{serial} // 1,
        stamp_na() };
    sign_entry('Add-Root-CA', $f, 'Operator-Signature', $a{key});
    return canon('Add-Root-CA', $f);
}

sub incorporate_entry {
    my ($ref) = @_;
    my ($tid) = $ref =~ /^TID: (\d+)$/m;
    my ($sn) = $ref =~ /^SN: (\d+)$/m;
    return canon('Incorporate', { 'Incorporated-Hash' => b64url(sha256($ref)),
        'Incorporated-SN' => $sn, 'Incorporated-TID' => $tid, stamp_na() });
}

# The canonical log of a timeline's data directory, read the way
# docs/timeline.md describes the files (not through the daemon): each
# "@<SHA-256 of the text, base64url>" in a CA-Cert-Chain replaced by the
# line of certs.log it names.
sub read_log {
    my ($dir) = @_;
    my %cert = map { ('@' . b64url(sha256($_)) => $_) }
        split /\n/, (-e "$dir/certs.log" ? slurp("$dir/certs.log") : '');
    my $log = slurp("$dir/entries.log");
    $log =~ s{^(CA-Cert-Chain: )(.*)$}{
        $1 . join(',', map { /^@/ ? $cert{$_} // die("no $_ in certs.log")
            : $_ } split(/,/, $2))
    }gme;
    return $log;
}

sub parse_entries {
    my ($data) = @_;
    return $data =~ /(.*?\n\n)/gs;
}

sub leaf_hash { return sha256("\x00" . $_[0]) }

sub mth {
    my @l = @_;
    return sha256('') if !@l;
    return $l[0] if @l == 1;
    my $k = 1;
    $k *= 2 while $k * 2 < @l;
    return sha256("\x01" . mth(@l[0 .. $k - 1]) . mth(@l[$k .. $#l]));
}

# RFC 9162 2.1.3.2
sub verify_inclusion {
    my ($leaf, $idx, $size, $proof, $root) = @_;
    return 0 if $idx >= $size;
    my ($fn, $sn, $r) = ($idx, $size - 1, $leaf);
    for my $p (@$proof) {
        return 0 if $sn == 0;
        if (($fn & 1) || $fn == $sn) {
            $r = sha256("\x01$p$r");
            while (!($fn & 1) && $fn != 0) { $fn >>= 1; $sn >>= 1; }
        } else {
            $r = sha256("\x01$r$p");
        }
        $fn >>= 1;
        $sn >>= 1;
    }
    return $sn == 0 && $r eq $root;
}

# RFC 9162 2.1.4.2
sub verify_consistency {
    my ($first, $second, $r1, $r2, $proof) = @_;
    return 0 if $first > $second || $first == 0;
    return (!@$proof && $r1 eq $r2) if $first == $second;
    my @p = @$proof;
    unshift @p, $r1 if ($first & ($first - 1)) == 0;
    return 0 if !@p;
    my ($fn, $sn) = ($first - 1, $second - 1);
    while ($fn & 1) { $fn >>= 1; $sn >>= 1; }
    my $fr = shift @p;
    my $sr = $fr;
    for my $c (@p) {
        return 0 if $sn == 0;
        if (($fn & 1) || $fn == $sn) {
            $fr = sha256("\x01$c$fr");
            $sr = sha256("\x01$c$sr");
            while (!($fn & 1) && $fn != 0) { $fn >>= 1; $sn >>= 1; }
        } else {
            $sr = sha256("\x01$sr$c");
        }
        $fn >>= 1;
        $sn >>= 1;
    }
    return $sn == 0 && $fr eq $r1 && $sr eq $r2;
}

1;
