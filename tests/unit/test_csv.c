/* SPDX-License-Identifier: MIT */
/* The CSV reader: RFC 4180 quoting, CRLF, blanks, comments, bad quotes with their line. */
#include <errno.h>

#include "core/csv.h"
#include "runner.h"

/* The next record of c must be n fields equal to want[], starting on line. */
static void expect(struct wt_csv *c, size_t line, size_t n, const char *const *want)
{
    WT_EQ_INT(wt_csv_next(c), 1);
    WT_EQ_U64(c->line, line);
    WT_EQ_U64(c->n, n);
    for (size_t i = 0; i < n; i++)
        WT_EQ_STR(c->field[i], want[i]);
}

WT_TEST(quoted_fields_hold_commas_quotes_and_line_breaks)
{
    static const char in[] = "a,\"b,c\",\"say \"\"hi\"\"\"\n"
                             "\"two\nlines\",x,\"\"\n"
                             "last,\" kept \" , \"\"\"\"\n";
    struct wt_csv c;
    wt_csv_init_mem(&c, in, sizeof in - 1);
    expect(&c, 1, 3, (const char *const[]){"a", "b,c", "say \"hi\""});
    expect(&c, 2, 3, (const char *const[]){"two\nlines", "x", ""});
    expect(&c, 4, 3, (const char *const[]){"last", " kept ", "\""});
    WT_EQ_INT(wt_csv_next(&c), 0);
    wt_csv_free(&c);
}

WT_TEST(empty_fields_and_blanks)
{
    static const char in[] = ",,\n  a  ,  , b c \n\n   \n,x,\n";
    struct wt_csv c;
    wt_csv_init_mem(&c, in, sizeof in - 1);
    expect(&c, 1, 3, (const char *const[]){"", "", ""});
    expect(&c, 2, 3, (const char *const[]){"a", "", "b c"});
    /* Lines 3 and 4 are blank: skipped, still counted. */
    expect(&c, 5, 3, (const char *const[]){"", "x", ""});
    WT_EQ_INT(wt_csv_next(&c), 0);
    WT_EQ_U64(c.lines, 6); /* the empty line after the last LF */
    wt_csv_free(&c);
}

WT_TEST(crlf_line_ends)
{
    static const char in[] = "t,v\r\n1,\"x\r\ny\"\r\n\r\n2,3\r\n";
    struct wt_csv c;
    wt_csv_init_mem(&c, in, sizeof in - 1);
    expect(&c, 1, 2, (const char *const[]){"t", "v"});
    expect(&c, 2, 2, (const char *const[]){"1", "x\ny"});
    expect(&c, 5, 2, (const char *const[]){"2", "3"});
    WT_EQ_INT(wt_csv_next(&c), 0);
    wt_csv_free(&c);
}

WT_TEST(comment_lines)
{
    static const char in[] = "# a, \"comment\nx,y\n  # indented\n\"#\",z\n";
    struct wt_csv c;
    wt_csv_init_mem(&c, in, sizeof in - 1);
    c.comment = '#';
    expect(&c, 2, 2, (const char *const[]){"x", "y"});
    expect(&c, 4, 2, (const char *const[]){"#", "z"}); /* quoted: data, not a comment */
    WT_EQ_INT(wt_csv_next(&c), 0);
    wt_csv_free(&c);
}

WT_TEST(bad_quotes_name_their_line_and_reading_goes_on)
{
    static const char in[] = "a,b\n"
                             "1,\"x\"y,3\n"
                             "4,5\n"
                             "6,\"open\n"
                             "7,8\n";
    struct wt_csv c;
    wt_csv_init_mem(&c, in, sizeof in - 1);
    expect(&c, 1, 2, (const char *const[]){"a", "b"});
    WT_EQ_INT(wt_csv_next(&c), -EINVAL);
    WT_EQ_U64(c.line, 2);
    WT_EQ_STR(c.why, "text after a closing quote");
    expect(&c, 3, 2, (const char *const[]){"4", "5"});
    /* The quote opened on line 4 is never closed: the rest of the file is that field. */
    WT_EQ_INT(wt_csv_next(&c), -EINVAL);
    WT_EQ_U64(c.line, 4);
    WT_EQ_STR(c.why, "unterminated quoted field");
    WT_EQ_INT(wt_csv_next(&c), 0);
    wt_csv_free(&c);
}

WT_TEST(a_quote_inside_an_unquoted_field_is_text)
{
    static const char in[] = "5\" disk,it's \"fine\"";
    struct wt_csv c;
    wt_csv_init_mem(&c, in, sizeof in - 1);
    expect(&c, 1, 2, (const char *const[]){"5\" disk", "it's \"fine\""});
    WT_EQ_INT(wt_csv_next(&c), 0);
    wt_csv_free(&c);
}

WT_TEST(a_stream_reads_as_a_buffer_does)
{
    char path[512];
    snprintf(path, sizeof path, "%s/s.csv", wt_test_dir());
    wt_test_write(path, "h1,h2\r\n\"q,1\",\"multi\nline\"\n\nx,\"bad\"!\ny,\n");
    FILE *f = fopen(path, "r");
    WT_ASSERT(f != NULL);
    struct wt_csv c;
    wt_csv_init_file(&c, f);
    expect(&c, 1, 2, (const char *const[]){"h1", "h2"});
    expect(&c, 2, 2, (const char *const[]){"q,1", "multi\nline"});
    WT_EQ_INT(wt_csv_next(&c), -EINVAL);
    WT_EQ_U64(c.line, 5);
    expect(&c, 6, 2, (const char *const[]){"y", ""});
    WT_EQ_INT(wt_csv_next(&c), 0);
    wt_csv_free(&c);
    fclose(f);
}

WT_TEST(fields_are_writable_and_bounded)
{
    /* 4097 fields: too many, named; the next record still reads. */
    size_t n = 4097 * 2 + 8;
    char *in = malloc(n);
    WT_ASSERT(in != NULL);
    size_t o = 0;
    for (int i = 0; i < 4097; i++) {
        in[o++] = 'x';
        in[o++] = i + 1 < 4097 ? ',' : '\n';
    }
    memcpy(in + o, "ab,cd\n", 6);
    o += 6;
    struct wt_csv c;
    wt_csv_init_mem(&c, in, o);
    WT_EQ_INT(wt_csv_next(&c), -EINVAL);
    WT_EQ_STR(c.why, "more than 4096 fields");
    WT_EQ_U64(c.line, 1);
    expect(&c, 2, 2, (const char *const[]){"ab", "cd"});
    c.field[0][0] = 'A'; /* in place, as the carbon parser lowercases its header */
    WT_EQ_STR(c.field[0], "Ab");
    wt_csv_free(&c);
    free(in);
}
