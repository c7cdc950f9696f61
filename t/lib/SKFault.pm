package SKFault;

# SKFault -- what the fault-injection tests (t/fault/*.t) share: a small
# filesystem of their own to fill up.
#
#   tmpfs(SIZE)          a fresh tmpfs of SIZE (mount's size=, e.g. '2m')
#                        on a new directory; unmounted (lazily, so even with
#                        a daemon still in it) and removed at exit, also
#                        when the test dies.  undef and $SKFault::why when
#                        it cannot be mounted (not root, no tmpfs)
#   fill(DIR)            fill DIR's filesystem to the last page: one big
#                        file, then one-page files; returns how many pages
#                        the latter took
#   free_pages(DIR, N)   give back N pages (0: all the filler)
#
# and bytes to change in a stopped daemon's LMDB file (data.mdb: no
# checksums), found by their content, every copy of them (LMDB keeps
# older pages too):
#
#   damage(FILE, BYTES, EDIT, FROM)
#                        EDIT applied at each place BYTES is in FROM (the
#                        file's content, undef: as it is now), written to
#                        FILE; how many places.  EDIT is an offset into
#                        BYTES whose byte is flipped (xor 0x01), or a sub
#                        (\$content, $position) changing the content there
#   flip(AT, MASK)       the EDIT xoring the byte AT from BYTES' start
#                        with MASK
#
# and a damaged sk-timeline started again (t/fault/timeline-*-rows.t):
#
#   restart_logged(T)    restart timeline T (SKTimeline), ok that it is
#                        up; a sub giving its log since
#   append_after_rebuild(T, WHAT, ENTRY, CODE, LIKE)
#                        POST ENTRY: 503 with Retry-After saying the index
#                        is rebuilt from the log, then again: CODE, and a
#                        body like LIKE

use strict;
use warnings;

use Exporter 'import';
use File::Temp qw(tempdir);
use Test::More;
use SKTest;
use SKTimeline qw(restart_timeline append);

our @EXPORT = qw(tmpfs fill free_pages damage flip restart_logged
    append_after_rebuild);
our $why = '';

my @mounts;

sub tmpfs {
    my ($size) = @_;
    if ($> != 0) {
        $why = 'not root: cannot mount a tmpfs';
        return undef;
    }
    my $dir = tempdir('sk-fault.XXXXXX', TMPDIR => 1, CLEANUP => 0);
    my $r = run_cmd(['mount', '-t', 'tmpfs', '-o', "size=$size,mode=0755",
        'sk-fault', $dir]);
    if ($r->{rc} != 0) {
        rmdir $dir;
        $why = "mount -t tmpfs: $r->{err}";
        return undef;
    }
    push @mounts, $dir;
    return $dir;
}

# Before SKTest's END (which stops the daemons): a lazy unmount detaches
# the tree at once and frees it when the last file in it is closed.
END {
    my $rc = $?;
    for my $dir (@mounts) {
        run_cmd(['umount', '-l', $dir]);
        rmdir $dir;
    }
    $? = $rc;
}

sub fill {
    my ($dir) = @_;
    my $big = "$dir/.fill";
    open my $f, '>', $big or die "fill: $big: $!";
    my $block = "\0" x 65536;
    while (syswrite($f, $block)) { }
    close $f;
    # The last 64 pages again as files of a page each, to give back singly.
    my $size = -s $big;
    truncate $big, $size > 262144 ? $size - 262144 : 0;
    my $n = 0;
    while (1) {
        open my $p, '>', "$dir/.fill.$n" or last;
        my $w = syswrite($p, "\0" x 4096);
        close $p;
        if (!defined $w || $w < 4096) {
            unlink "$dir/.fill.$n";
            last;
        }
        $n++;
    }
    return $n;
}

sub free_pages {
    my ($dir, $n) = @_;
    opendir my $d, $dir or die "free_pages: $dir: $!";
    my @pages = sort grep { /^\.fill\.\d+$/ } readdir $d;
    closedir $d;
    if (!$n) {
        unlink "$dir/.fill", map { "$dir/$_" } @pages;
        return;
    }
    die "free_pages: only " . @pages . " page files" if @pages < $n;
    unlink map { "$dir/$_" } @pages[0 .. $n - 1];
}

sub flip {
    my ($at, $mask) = @_;
    return sub { my ($data, $pos) = @_;
        substr($$data, $pos + $at, 1) ^= chr($mask) };
}

sub damage {
    my ($file, $bytes, $edit, $from) = @_;
    my $data = $from // slurp($file);
    $edit = flip($edit, 0x01) unless ref $edit;
    my ($pos, $n) = (0, 0);
    while (($pos = index($data, $bytes, $pos)) >= 0) {
        $edit->(\$data, $pos);
        $pos += length $bytes;
        $n++;
    }
    spew($file, $data);
    return $n;
}

sub restart_logged {
    my ($t) = @_;
    my $from = -s $t->{log};
    restart_timeline($t);
    ok($t->{up}, 'restarts with the damage') or diag(slurp($t->{log}));
    return sub { substr(slurp($t->{log}), $from) };
}

sub append_after_rebuild {
    my ($t, $what, $e, $code, $like) = @_;
    spew("$t->{dir}/e.txt", $e);
    my $r = run_cmd(['curl', '-s', '-i', '--data-urlencode',
        "e\@$t->{dir}/e.txt", "$t->{url}/append"]);
    like($r->{out}, qr{^HTTP/1\.1 503 }m, "$what: 503 at first");
    like($r->{out}, qr{^Retry-After: 1\r?$}mi, '... with Retry-After');
    like($r->{out}, qr{found damaged and rebuilt from the log},
        '... saying why');
    my $again = append($t, $e);
    is($again->{code}, $code, "$what: then $code") or diag($again->{body});
    like($again->{body}, $like, '... as the log implies');
}

1;
